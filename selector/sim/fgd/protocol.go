package fgd

import (
	"math/rand"
)

// arrivals is steps 1 to 3 of the protocol (see the package comment): the
// order in which jobs arrive (indices into w.Jobs, with repeats after
// tuning), each node's rank (lower wins ties) and the random stream, left
// where the FGD simulator's would be when scheduling starts.
//
// The calls on the stream follow the FGD simulator exactly, so a seed gives
// the same pod order and the same node ranks there and here:
// rand.Seed(seed); one rand.Int() (an argument of a debug log line,
// evaluated even when not printed); rand.Shuffle over the pods sorted by
// name (SortClusterPods); rand.Intn per drawn pod in tuneUpPods (or per
// removed pod in tuneDownPods); then, when its scheduler starts, each of
// the informers it had not started yet begins to watch, and client-go's
// reflector draws rand.Float64() for the watch timeout: informerDraws
// draws; then rand.Perm over the nodes sorted by name
// (syncClusterResourceList). The global stream of Go 1.15 that the FGD
// simulator used is rand.NewSource's. With these calls the deterministic
// policies reproduce the authors' published per-seed curves exactly (see
// the tests), which is how informerDraws was established.
//
// One detail of the original is kept on purpose: tuneUpPods stops when the
// running total plus the drawn pod's per-GPU share (not its total) passes
// the target.
func arrivals(w *Workload, seed int64, tune float64) (order []int, ranks []int32, rng *rand.Rand) {
	rng = rand.New(rand.NewSource(seed))
	rng.Int()
	order = append([]int(nil), w.byName...)
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	order = tuned(w, order, tune, rng)
	for range informerDraws {
		rng.Float64()
	}
	perm := rng.Perm(len(w.nodesByName))
	ranks = make([]int32, len(w.nodesByName))
	for i, n := range w.nodesByName {
		ranks[n] = int32(perm[i])
	}
	return order, ranks, rng
}

// informerDraws is the number of random draws the FGD simulator's
// informers make between the tuning and the node permutation.
const informerDraws = 10

// tuned is FGD's TunePodsByNodeTotalResource: draw pods (with replacement,
// from the list sorted by name) until the GPU request reaches tune x
// capacity, or remove random pods while it is above.
func tuned(w *Workload, order []int, tune float64, rng *rand.Rand) []int {
	if tune <= 0 {
		return order
	}
	var total int64
	for _, i := range order {
		total += w.Jobs[i].TotalMilli()
	}
	target := tune * float64(w.capacity)
	switch {
	case float64(total) < target:
		for {
			i := w.byName[rng.Intn(len(w.byName))]
			j := &w.Jobs[i]
			if float64(total+int64(j.Milli)) > target {
				return order
			}
			total += j.TotalMilli()
			order = append(order, i)
		}
	case float64(total) > target:
		for float64(total) > target && len(order) > 0 {
			k := rng.Intn(len(order))
			total -= w.Jobs[order[k]].TotalMilli()
			order = append(order[:k], order[k+1:]...)
		}
	}
	return order
}
