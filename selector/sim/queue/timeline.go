package queue

import (
	"cmp"
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Over time: the step functions a report draws, computed from a Result
// alone, after the replay (no replay state is kept for them): the
// stranded GPUs (stranded.go's measure at each moment) and the cluster's
// whole free nodes and leaves (every GPU free: what a big gang needs).
// Each run of a job holds the GPUs of Outcome.Used (Requeue.Used for the
// runs a plan cut short) from its start to its end. Naive-pods' partial
// gangs hold GPUs before they start; those count from the start only, so
// naive-pods' free nodes are an upper bound.

// Step is one step of a step function of replay time: the value V from T
// until the next step's T. A step function's first step is at -Inf (the
// empty cluster, nothing waiting) and its last holds on.
type Step struct{ T, V float64 }

// StrandedSteps is r's stranded GPUs over time (stranded.go).
func StrandedSteps(r *Result) []Step {
	ev := strandedEvents(r)
	slices.SortStableFunc(ev, func(a, b strandedEvent) int { return cmp.Compare(a.t, b.t) })
	waiting := map[int]int{} // GPUs -> waiting jobs of that size
	busy := 0
	steps := []Step{{math.Inf(-1), 0}}
	for i, e := range ev {
		busy += e.busy
		if e.by != 0 {
			if waiting[e.size] += e.by; waiting[e.size] == 0 {
				delete(waiting, e.size)
			}
		}
		if i+1 < len(ev) && ev[i+1].t == e.t {
			continue // the events of one moment together
		}
		steps = append(steps, Step{e.t, float64(stranded(r.GPUs-busy, waiting))})
	}
	return steps
}

// useEvent changes the GPUs held on a node at time t by gpus.
type useEvent struct {
	t    float64
	node topology.NodeID
	gpus int32
}

// FreeWhole is, over r's replay on cluster c, the number of nodes with
// every GPU free and of leaves with every node so (leaves is nil for a
// cluster without leaf switches). Nodes without GPUs are not counted. r
// must come from a replay with Config.RecordUse; it panics otherwise (a
// job ran, its nodes were not kept: every node would read free).
func FreeWhole(r *Result, c *topology.Cluster) (nodes, leaves []Step) {
	ev := useEvents(r)
	slices.SortStableFunc(ev, func(a, b useEvent) int { return cmp.Compare(a.t, b.t) })
	held := make([]int32, len(c.Nodes))                     // GPUs held, by node
	leafOf := make([]int, len(c.Nodes))                     // index into ByTier[TierLeaf], -1: none
	busyIn := make([]int, len(c.ByTier[topology.TierLeaf])) // nodes in use, by leaf
	freeNodes, freeLeaves := 0, len(busyIn)
	leafIx := map[topology.DomainID]int{}
	for i, d := range c.ByTier[topology.TierLeaf] {
		leafIx[d] = i
	}
	for i := range c.Nodes {
		leafOf[i] = -1
		if l, ok := leafIx[c.Nodes[i].Up[topology.TierLeaf]]; ok {
			leafOf[i] = l
		}
		if c.Nodes[i].NumGPUs() > 0 {
			freeNodes++
		}
	}
	nodes = []Step{{math.Inf(-1), float64(freeNodes)}}
	if len(busyIn) > 0 {
		leaves = []Step{{math.Inf(-1), float64(freeLeaves)}}
	}
	for i, e := range ev {
		was := held[e.node]
		held[e.node] += e.gpus
		if d := usedDelta(was, held[e.node]); d != 0 {
			freeNodes -= d
			if l := leafOf[e.node]; l >= 0 {
				if busyIn[l] == 0 || busyIn[l]+d == 0 {
					freeLeaves -= d
				}
				busyIn[l] += d
			}
		}
		if i+1 < len(ev) && ev[i+1].t == e.t {
			continue
		}
		nodes = append(nodes, Step{e.t, float64(freeNodes)})
		if leaves != nil {
			leaves = append(leaves, Step{e.t, float64(freeLeaves)})
		}
	}
	return nodes, leaves
}

// usedDelta is +1 when a node goes from no GPU held to some, -1 back, 0
// otherwise.
func usedDelta(was, now int32) int {
	switch {
	case was == 0 && now > 0:
		return 1
	case was > 0 && now == 0:
		return -1
	}
	return 0
}

// useEvents are the starts and ends of every run of r on its nodes (the
// events of one moment count together: a node handed from one job to the
// next at that moment is never free).
func useEvents(r *Result) []useEvent {
	var ev []useEvent
	add := func(start, end float64, used []NodeGPUs) {
		for _, u := range used {
			ev = append(ev, useEvent{start, u.Node, u.GPUs}, useEvent{end, u.Node, -u.GPUs})
		}
	}
	for _, q := range r.Requeues {
		add(q.Start, q.At, q.Used)
	}
	for j := range r.Outcomes {
		if o := &r.Outcomes[j]; !math.IsNaN(o.Start) {
			if o.Used == nil {
				panic("queue: FreeWhole of a replay without Config.RecordUse")
			}
			add(o.Start, o.End, o.Used)
		}
	}
	return ev
}

// Integrate is the integral of steps over [lo, hi].
func Integrate(steps []Step, lo, hi float64) float64 {
	total := 0.0
	for i, s := range steps {
		to := math.Inf(1)
		if i+1 < len(steps) {
			to = steps[i+1].T
		}
		if a, b := max(s.T, lo), min(to, hi); b > a {
			total += s.V * (b - a)
		}
	}
	return total
}

// BinMeans is the mean of steps over each of n equal bins of [lo, hi]
// (n > 0, hi > lo), in one pass over the steps.
func BinMeans(steps []Step, lo, hi float64, n int) []float64 {
	out := make([]float64, n)
	w := (hi - lo) / float64(n)
	i := 0
	for b := range out {
		a, z := lo+float64(b)*w, lo+float64(b+1)*w
		for i+1 < len(steps) && steps[i+1].T <= a {
			i++ // the step in force at a
		}
		sum := 0.0
		for k := i; k < len(steps) && steps[k].T < z; k++ {
			to := math.Inf(1)
			if k+1 < len(steps) {
				to = steps[k+1].T
			}
			sum += steps[k].V * (min(to, z) - max(steps[k].T, a))
		}
		out[b] = sum / w
	}
	return out
}
