package fgd

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// gangtopoPolicy is gangtopo's placement engine (selector/place), given
// the same knowledge FGD has: the workload's typical pods. Every pod is the
// engine's request as Slurm would pass it (one node, the pod's GPUs,
// share, models, CPU and memory); a CPU-only pod goes where it strands
// the least GPU capacity by the engine's own measure (place.Engine's
// CPU-only path).
//
// This is the engine alone, deciding every pod itself. What a cluster
// runs is the decision of the plugin, carried out by Slurm: the
// gangtopo-slurm policy.
type gangtopoPolicy struct {
	e *place.Engine
}

func newGangtopo(env *Env) (Policy, error) {
	w := env.Workload.Typical
	return &gangtopoPolicy{e: place.New(env.Cluster, place.Options{Workload: &w})}, nil
}

func (g *gangtopoPolicy) Name() string { return "gangtopo" }

func (g *gangtopoPolicy) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	res := g.e.Place(s, j.Req)
	if res.Status != place.Placed {
		return occupancy.Allocation{}, false
	}
	return res.Alloc, true
}
