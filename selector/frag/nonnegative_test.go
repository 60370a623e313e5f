package frag

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// mixedLeaves is a cluster whose leaves mix node sizes: a DGX H100 and two
// 2-GPU T4 nodes in one leaf, 4-GPU PCIe nodes and 2-GPU nodes in the other.
func mixedLeaves() *topology.Cluster {
	s := topology.Spec{Name: "mixed"}
	s.Nodes = append(s.Nodes, topotest.DGXH100("dgx1"), topotest.SmallGPUNode("t4-1", "t4", 2), topotest.SmallGPUNode("t4-2", "t4", 2))
	for i := 1; i <= 3; i++ {
		s.Nodes = append(s.Nodes, topotest.PCIeFourGPU("p"+strconv.Itoa(i)), topotest.SmallGPUNode("a10-"+strconv.Itoa(i), "a10", 2))
	}
	s.Leaves = []topology.LeafSpec{{Name: "l1", Nodes: []string{"dgx1", "t4-1", "t4-2"}},
		{Name: "l2", Nodes: []string{"p1", "p2", "p3", "a10-1", "a10-2", "a10-3"}}}
	return topotest.MustBuild(s)
}

// Fragmentation is an amount of idle GPUs: never negative, never more
// than the idle GPUs, whatever the occupancy (frag on the empty hetero.yaml
// reported "gang fragmentation -0.4 GPUs").
func FuzzFragmentationIsAnAmountOfIdleGPUs(f *testing.F) {
	f.Add(uint8(0), uint64(1), uint8(0))
	f.Add(uint8(1), uint64(2), uint8(0))
	f.Add(uint8(1), uint64(3), uint8(40))
	f.Add(uint8(2), uint64(4), uint8(70))
	clusters := []*topology.Cluster{topotest.Lab16(), mixedLeaves(), topotest.NVL72(2)}
	w := PhillyPrior(4)
	meters := make([]*Meter, len(clusters))
	for i, c := range clusters {
		meters[i] = NewMeter(c, &w)
	}
	f.Fuzz(func(t *testing.T, ci uint8, seed uint64, fill uint8) {
		m := meters[int(ci)%len(meters)]
		c := m.Cluster
		s := occupancy.New(c)
		rng := rand.New(rand.NewPCG(seed, 25))
		for n := range c.Nodes {
			var busy []int
			for g := 0; g < c.Nodes[n].NumGPUs(); g++ {
				if rng.IntN(100) < int(fill)%100 {
					busy = append(busy, g)
				}
			}
			if len(busy) > 0 {
				if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: topology.NodeID(n), GPUs: busy, Milli: 1000}}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		r := m.BuildReport(s)
		idle := float64(r.IdleMilli)
		for name, v := range map[string]float64{"FGD": r.FragMilli, "gang": r.GangMilli, "stranded": r.StrandedMilli} {
			if v < -1e-9 {
				t.Errorf("%s: %s fragmentation %g milli-GPUs is negative (idle %g)", c.Name, name, v, idle)
			}
		}
		if r.FragMilli > idle+1e-9 || r.StrandedMilli > idle+1e-9 {
			t.Errorf("%s: fragmentation above the idle capacity: FGD %g, stranded %g, idle %g", c.Name, r.FragMilli, r.StrandedMilli, idle)
		}
	})
}
