package sim

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// gangtopoPolicy is gangtopo's placement engine (selector/place), given
// the same knowledge FGD has: the workload's typical pods. Every GPU pod is
// the engine's request as Slurm would pass it (one node, the pod's GPUs,
// share, models, CPU and memory).
//
// The engine leaves CPU-only jobs to Slurm. In the FGD protocol they
// compete with GPU pods for the CPUs of GPU nodes, so a policy must place
// them: this one puts a CPU-only pod where it adds the least fragmentation
// (the engine's own measure, frag.Meter, over the same typical pods), the
// lowest Slurm order among equals.
type gangtopoPolicy struct {
	e       *place.Engine
	m       *frag.Meter
	scratch [64]uint16
}

func newGangtopo(env *Env) (Policy, error) {
	w := env.Workload.Typical
	e := place.New(env.Cluster, place.Options{Workload: &w})
	return &gangtopoPolicy{e: e, m: e.Meter()}, nil
}

func (g *gangtopoPolicy) Name() string { return "gangtopo" }

func (g *gangtopoPolicy) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	if j.GPUs == 0 {
		return g.placeCPU(s, j)
	}
	res := g.e.Place(s, j.Req)
	if res.Status != place.Placed {
		return occupancy.Allocation{}, false
	}
	return res.Alloc, true
}

// placeCPU puts a CPU-only job on the node whose fragmentation grows least.
func (g *gangtopoPolicy) placeCPU(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	best, at := 0.0, topology.NodeID(-1)
	for i := range s.Cluster.Nodes {
		n := topology.NodeID(i)
		if !fits(s, n, j) {
			continue
		}
		free := s.NodeFree(n)
		after := g.scratch[:len(free)]
		copy(after, free)
		d := g.m.NodeAfter(n, after, s.FreeCPUMilli[n]-int32(j.CPUMilli)) - g.m.Node(s, n)
		if at < 0 || d < best-1e-6 {
			best, at = d, n
		}
	}
	if at < 0 {
		return occupancy.Allocation{}, false
	}
	return nodeAlloc(at, nil, j), true
}
