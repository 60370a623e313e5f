package stockslurm

import (
	"math/rand/v2"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// TestInvariants fills clusters job by job with random requests of every
// form, through both models, and checks every answer: the allocation
// applies to the snapshot, holds exactly the GPUs asked for (g on each node
// for per-node forms), stays within the node range, and never uses a
// drained node. Jobs end at random, so the cluster churns between
// fragmented and full and pending answers are exercised too.
func TestInvariants(t *testing.T) {
	clusters := map[string]*topology.Cluster{
		"tree8":  tree8(),
		"flat8":  flat8(),
		"dgx1x4": topotest.FatTree(2, 1, 2, topotest.DGX1),
		"lab16":  topotest.Lab16(),
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for name, c := range clusters {
		for _, opts := range []Options{{Tree: true}, {}} {
			m := New(c, opts)
			s := occupancy.New(c)
			s.SetState(topology.NodeID(len(c.Nodes)-1), occupancy.StateDrain)
			var running []occupancy.Allocation
			placed := 0
			for step := 0; step < 600; step++ {
				if len(running) > 0 && rng.IntN(3) == 0 {
					k := rng.IntN(len(running))
					if err := s.Release(running[k]); err != nil {
						t.Fatal(err)
					}
					running = append(running[:k], running[k+1:]...)
				}
				j := randomJob(rng)
				a, ok, err := m.PlaceJob(s, &j)
				if err != nil {
					t.Fatalf("%s %s step %d job %+v: %v", name, m.Name(), step, j, err)
				}
				if !ok {
					continue
				}
				if msg := checkAlloc(s, &j, a); msg != "" {
					t.Fatalf("%s %s step %d job %+v: %s: %+v", name, m.Name(), step, j, msg, a)
				}
				if err := s.Allocate(a); err != nil {
					t.Fatalf("%s %s step %d: allocation does not apply: %v", name, m.Name(), step, err)
				}
				running = append(running, a)
				placed++
			}
			if placed < 100 {
				t.Errorf("%s %s: only %d of 600 jobs placed; the check saw too little", name, m.Name(), placed)
			}
		}
	}
}

func randomJob(rng *rand.Rand) Job {
	sizes := []int{1, 1, 1, 2, 4, 8, 16}
	g := sizes[rng.IntN(len(sizes))]
	switch rng.IntN(4) {
	case 0:
		n := 1 + rng.IntN(2)
		return Job{GPUsPerNode: g/n + 1, MinNodes: n, MaxNodes: n, CPUsPerGPU: 1, CPUMilli: int64((g/n+1)*n) * 1000}
	case 1:
		return Job{Share: 100 + rng.IntN(800), GPUsPerNode: 1, MinNodes: 1, MaxNodes: 1, CPUsPerTask: 1, CPUMilli: 1000}
	case 2:
		return Job{GPUsPerJob: g, MinNodes: 1, MaxNodes: 1, CPUsPerTask: 1}
	}
	return perJob(g)
}

// checkAlloc returns what is wrong with a, or "".
func checkAlloc(s *occupancy.Snapshot, j *Job, a occupancy.Allocation) string {
	if err := s.Fits(a); err != nil {
		return err.Error()
	}
	n := len(a.Nodes)
	if n < max(j.MinNodes, 1) || (j.MaxNodes > 0 && n > j.MaxNodes) {
		return "node count out of range"
	}
	for _, na := range a.Nodes {
		if !s.State[na.Node].Usable() {
			return "unusable node"
		}
		if j.GPUsPerNode > 0 && len(na.GPUs) != j.GPUsPerNode {
			return "per-node count not met"
		}
		if j.Share > 0 && (na.Milli != uint16(j.Share) || len(na.GPUs) != 1) {
			return "share not one GPU at the asked share"
		}
	}
	if j.GPUsPerJob > 0 && a.NumGPUs() != j.GPUsPerJob {
		return "per-job count not met"
	}
	return ""
}
