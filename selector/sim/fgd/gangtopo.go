package fgd

import (
	"math"

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
// them: this one puts a CPU-only pod where it strands the least GPU
// capacity by the engine's own measure over the same typical pods, the
// lowest Slurm order among equals.
type gangtopoPolicy struct {
	e *place.Engine
	m *frag.Meter
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

// placeCPU puts a CPU-only job where the engine's single-node measure
// (frag.FillModel: GPU capacity the node's CPUs could no longer feed)
// grows least, at the engine's resolution, the lowest Slurm order among
// equals.
func (g *gangtopoPolicy) placeCPU(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	best, at := 0.0, topology.NodeID(-1)
	for i := range s.Cluster.Nodes {
		n := topology.NodeID(i)
		if !fits(s, n, j) {
			continue
		}
		d := g.m.WasteAfter(n, s.NodeFree(n), s.FreeCPUMilli[n]-int32(j.CPUMilli)) - g.m.Waste(s, n)
		d = math.Round(d/cpuTie) * cpuTie
		if at < 0 || d < best {
			best, at = d, n
		}
	}
	if at < 0 {
		return occupancy.Allocation{}, false
	}
	return nodeAlloc(at, nil, j), true
}

// cpuTie is the engine's fill-model resolution (place.fillTie), 80 milli-GPUs.
const cpuTie = 80
