package fgd

import (
	"math/rand"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// random is FGD's RandomScore: among the nodes the job fits, one chosen
// uniformly at random; for a share, a random GPU that holds it. It draws
// from the run's stream. (The FGD simulator's draws also depend on the
// order in which its parallel filter happens to list the feasible nodes,
// so only the distribution, not the sequence, can be reproduced.)
type random struct {
	rng      *rand.Rand
	feasible []topology.NodeID
}

func newRandom(env *Env) (Policy, error) {
	return &random{rng: env.Rand}, nil
}

func (r *random) Name() string { return "Random" }

func (r *random) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	r.feasible = r.feasible[:0]
	for n := range s.Cluster.Nodes {
		if fits(s, topology.NodeID(n), j) {
			r.feasible = append(r.feasible, topology.NodeID(n))
		}
	}
	if len(r.feasible) == 0 {
		return occupancy.Allocation{}, false
	}
	n := r.feasible[0]
	if len(r.feasible) > 1 { // one feasible node is taken without scoring
		n = r.feasible[r.rng.Intn(len(r.feasible))]
	}
	free := s.NodeFree(n)
	var gpus []int
	switch {
	case isShare(j):
		gpus = []int{randomGPU(free, j.Milli, r.rng)}
	case j.GPUs > 0:
		gpus = exclusive(free, j.GPUs)
	}
	return nodeAlloc(n, gpus, j), true
}
