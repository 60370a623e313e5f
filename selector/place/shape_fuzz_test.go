package place

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// A placement holds exactly what was asked, or there is none. Whatever the
// request's GPUs, nodes, GPUs per node, tier, mode and slice, and whatever
// the occupancy, a placed result has the request's GPU count, its node
// count when fixed, its GPUs on every node when fixed, only free GPUs,
// each once, inside its domain, and that domain inside the tier a required
// request names; every other result says why in its message. (`place
// --gpus 16 --gpus-per-node 3` printed "placed" for 15 GPUs.)

// shapeClusters are the fixtures the property is checked on: a fat tree of
// DGX H100, NVL72 racks (NVLink across trays), the small GB200 lab, a
// cluster of two GPU models, and eight-GPU nodes of NVLink pairs.
var shapeClusters = []*topology.Cluster{
	topotest.Lab16(),
	topotest.NVL72(2),
	topotest.GB200Lab(2, 4),
	topotest.MustBuild(heteroSpec()),
	topotest.FatTree(1, 2, 3, topotest.DGX1),
}

func FuzzPlacementHoldsTheRequest(f *testing.F) {
	// cluster, gpus, nodes, per node, tier, slice, preferred, seed, fill %
	f.Add(uint8(0), uint8(16), uint8(0), uint8(3), uint8(0), uint8(0), false, uint64(1), uint8(0)) // 16 with 3 per node: refused
	f.Add(uint8(0), uint8(8), uint8(0), uint8(3), uint8(0), uint8(0), false, uint64(1), uint8(0))  // 8 with 3 per node: refused
	f.Add(uint8(0), uint8(8), uint8(3), uint8(0), uint8(0), uint8(0), false, uint64(1), uint8(0))  // 8 on 3 nodes: 6+1+1
	f.Add(uint8(0), uint8(6), uint8(0), uint8(3), uint8(0), uint8(0), false, uint64(2), uint8(40)) // 2 nodes x 3
	f.Add(uint8(0), uint8(32), uint8(0), uint8(0), uint8(4), uint8(8), false, uint64(3), uint8(30))
	f.Add(uint8(1), uint8(16), uint8(0), uint8(0), uint8(1), uint8(0), false, uint64(4), uint8(20)) // nvlink over trays
	f.Add(uint8(1), uint8(32), uint8(0), uint8(0), uint8(4), uint8(8), true, uint64(5), uint8(50))
	f.Add(uint8(2), uint8(8), uint8(3), uint8(0), uint8(3), uint8(0), false, uint64(6), uint8(10))
	f.Add(uint8(3), uint8(4), uint8(2), uint8(0), uint8(0), uint8(0), true, uint64(7), uint8(60))
	f.Add(uint8(4), uint8(12), uint8(0), uint8(4), uint8(0), uint8(2), false, uint64(8), uint8(25))
	engines := make([]*Engine, len(shapeClusters))
	for i, c := range shapeClusters {
		engines[i] = New(c, Options{})
	}
	f.Fuzz(func(t *testing.T, ci, gpus, nodes, perNode, tier, slice uint8, preferred bool, seed uint64, fill uint8) {
		e := engines[int(ci)%len(engines)]
		c := e.Cluster()
		s := randomOccupancy(t, c, seed, int(fill)%100)
		r := request.Request{GPUs: int(gpus)%160 + 1, Nodes: int(nodes) % 12, GPUsPerNode: int(perNode) % 10,
			Tier: topology.Tier(int(tier) % (int(topology.TierCluster) + 1)), Slice: int(slice) % 10}
		if preferred {
			r.Mode = request.Preferred
		}
		res := e.Place(s, r)
		if res.Status != Placed {
			if res.Message == "" {
				t.Errorf("%s on %s: %v without a message", r.String(), c.Name, res.Status)
			}
			return
		}
		if err := checkHolds(c, s, r, res); err != nil {
			t.Errorf("%s on %s (fill %d%%, seed %d): placed %s: %v", r.String(), c.Name, int(fill)%100, seed, Describe(c, res.Alloc), err)
		}
	})
}

// checkHolds says how a placed result differs from its request, or nil.
func checkHolds(c *topology.Cluster, s *occupancy.Snapshot, r request.Request, res Result) error {
	if err := s.Fits(res.Alloc); err != nil {
		return fmt.Errorf("takes what is not free: %v", err)
	}
	if got := res.Alloc.NumGPUs(); got != r.GPUs {
		return fmt.Errorf("%d GPUs, asked %d", got, r.GPUs)
	}
	wantNodes := r.Nodes
	if wantNodes == 0 && r.GPUsPerNode > 0 {
		wantNodes = r.GPUs / r.GPUsPerNode
	}
	if wantNodes > 0 && len(res.Alloc.Nodes) != wantNodes {
		return fmt.Errorf("%d nodes, asked %d", len(res.Alloc.Nodes), wantNodes)
	}
	dom := &c.Domains[res.Domain]
	seen := map[topology.NodeID]bool{}
	for _, na := range res.Alloc.Nodes {
		if seen[na.Node] {
			return fmt.Errorf("node %s twice", c.Nodes[na.Node].Name)
		}
		seen[na.Node] = true
		if r.GPUsPerNode > 0 && len(na.GPUs) != r.GPUsPerNode {
			return fmt.Errorf("%d GPUs on %s, asked %d per node", len(na.GPUs), c.Nodes[na.Node].Name, r.GPUsPerNode)
		}
		if len(na.GPUs) == 0 {
			return fmt.Errorf("node %s without a GPU", c.Nodes[na.Node].Name)
		}
		for k, g := range na.GPUs {
			if g < 0 || g >= c.Nodes[na.Node].NumGPUs() || k > 0 && g <= na.GPUs[k-1] {
				return fmt.Errorf("GPU indices %v on %s are not distinct local indices", na.GPUs, c.Nodes[na.Node].Name)
			}
		}
		if na.Node < dom.NodeLo || na.Node >= dom.NodeHi {
			return fmt.Errorf("node %s outside the domain %s", c.Nodes[na.Node].Name, dom.Name)
		}
	}
	if r.Mode == request.Required && dom.Tier > r.EffectiveTier() &&
		!(r.EffectiveTier() == topology.TierNVLink && dom.Tier == topology.TierBlock && dom.NVLink) {
		return fmt.Errorf("domain %s is a %s, wider than the required %s", dom.Name, dom.Tier, r.EffectiveTier())
	}
	return nil
}

// randomOccupancy marks about pct percent of the GPUs busy, one at a time,
// at random (seeded).
func randomOccupancy(t *testing.T, c *topology.Cluster, seed uint64, pct int) *occupancy.Snapshot {
	t.Helper()
	s := occupancy.New(c)
	rng := rand.New(rand.NewPCG(seed, 25))
	for n := range c.Nodes {
		var busy []int
		for g := 0; g < c.Nodes[n].NumGPUs(); g++ {
			if rng.IntN(100) < pct {
				busy = append(busy, g)
			}
		}
		if len(busy) == 0 {
			continue
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: topology.NodeID(n), GPUs: busy, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
