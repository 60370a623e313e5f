package frag

import (
	"fmt"
	"math"
	"sort"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// NodeShape is a single-node request shape: GPUs GPUs of Milli each
// (Milli 0 means a CPU-only shape), CPUMilli CPU in total, on one of Models
// (empty set: any model).
type NodeShape struct {
	GPUs     int
	Milli    int
	CPUMilli int64
	Models   topology.ModelSet
	// Spec is the model constraint as the request wrote it (e.g. a trace's
	// "V100M16|V100M32"). It does not change how a shape fragments; it
	// only keeps apart, when Typical counts shapes, requests that the FGD
	// simulator counts apart ("V100M16|V100M32" and
	// "V100M16|V100M32|V100M32" are two pod types there).
	Spec   string
	Weight float64
}

// GangShape is a multi-node shape: Nodes whole nodes inside one domain of
// Tier, on one of Models (empty set: any model).
type GangShape struct {
	Nodes  int
	Tier   topology.Tier
	Models topology.ModelSet
	Weight float64
}

// Workload is a distribution of typical request shapes. The weights of all
// shapes, node and gang, sum to 1.
type Workload struct {
	Node  []NodeShape
	Gangs []GangShape
}

// Normalize scales the weights to sum to 1 and drops shapes of weight 0.
// It fails on negative weights or an empty workload.
func (w *Workload) Normalize() error {
	total := 0.0
	for _, s := range w.Node {
		if s.Weight < 0 {
			return fmt.Errorf("negative weight %g for a %d-GPU shape", s.Weight, s.GPUs)
		}
		total += s.Weight
	}
	for _, g := range w.Gangs {
		if g.Weight < 0 || g.Nodes < 1 {
			return fmt.Errorf("gang shape of %d nodes with weight %g is not valid", g.Nodes, g.Weight)
		}
		total += g.Weight
	}
	if total <= 0 {
		return fmt.Errorf("the workload has no shapes with positive weight")
	}
	node := w.Node[:0]
	for _, s := range w.Node {
		if s.Weight > 0 {
			s.Weight /= total
			node = append(node, s)
		}
	}
	gangs := w.Gangs[:0]
	for _, g := range w.Gangs {
		if g.Weight > 0 {
			g.Weight /= total
			gangs = append(gangs, g)
		}
	}
	w.Node, w.Gangs = node, gangs
	return nil
}

// Typical picks a typical workload from observed shapes the way FGD does
// (GetTypicalPods in pkg/utils/frag.go of the FGD simulator): count each
// distinct shape, sort by count, descending, keep the most popular ones
// until they cover at least coverage (e.g. 0.95) of all observations, and
// renormalise the kept counts to weights.
//
// Shapes with equal counts are ordered as FGD orders them (it sorts the
// reverse of PodResource.Less): larger CPUMilli first, then larger Milli,
// more GPUs, and the larger Spec (then Models) string. The order matters
// where the cut falls among shapes of equal count, which is common in long
// tails of rare shapes. The cut compares the covered count against
// pct*total/100 when coverage is a whole percentage, FGD's own arithmetic,
// so a boundary that lands exactly on a whole pod is treated alike.
func Typical(observed []NodeShape, coverage float64) Workload {
	type entry struct {
		s     NodeShape
		count int
	}
	idx := map[NodeShape]int{}
	var entries []entry
	for _, s := range observed {
		s.Weight = 0
		if j, ok := idx[s]; ok {
			entries[j].count++
			continue
		}
		idx[s] = len(entries)
		entries = append(entries, entry{s, 1})
	}
	sort.Slice(entries, func(a, b int) bool {
		if entries[a].count != entries[b].count {
			return entries[a].count > entries[b].count
		}
		return fgdLess(entries[b].s, entries[a].s)
	})
	total := float64(len(observed))
	need := coverage * total
	if pct := math.Round(coverage * 100); math.Abs(pct-coverage*100) < 1e-9 {
		need = pct * total / 100
	}
	var w Workload
	covered := 0.0
	for _, e := range entries {
		if covered >= need {
			break
		}
		w.Node = append(w.Node, e.s)
		covered += float64(e.count)
	}
	// FGD's weights: (count/total) / (covered/total).
	for i := range w.Node {
		w.Node[i].Weight = float64(entries[i].count) / total / (covered / total)
	}
	return w
}

// fgdLess reports whether a sorts before b in FGD's PodResource order
// (MilliCpu, MilliGpu, GpuNumber, GpuType, each ascending).
func fgdLess(a, b NodeShape) bool {
	switch {
	case a.CPUMilli != b.CPUMilli:
		return a.CPUMilli < b.CPUMilli
	case a.Milli != b.Milli:
		return a.Milli < b.Milli
	case a.GPUs != b.GPUs:
		return a.GPUs < b.GPUs
	case a.Spec != b.Spec:
		return a.Spec < b.Spec
	}
	return a.Models < b.Models
}

// PhillyPrior is the default workload when nothing better is known: the
// GPU-count distribution of Microsoft's Philly trace (philly-via-pollux),
// restricted to 1..32 GPUs and with 8+ GPU jobs reweighted to 10% of jobs,
// the same mix the stock-Slurm reference runs used
// (shared/data/slurm-22.05-reference/sequences/weights.csv):
// 1: 0.859, 2: 0.020, 4: 0.021, 8: 0.086, 16: 0.0104, 32: 0.0035.
// Jobs of 16 and 32 GPUs become gangs of 2 and 4 whole 8-GPU nodes in one
// leaf. cpusPerGPU sets each node shape's CPU request.
func PhillyPrior(cpusPerGPU int64) Workload {
	w := Workload{
		Node: []NodeShape{
			{GPUs: 1, Milli: 1000, CPUMilli: 1 * cpusPerGPU * 1000, Weight: 0.859},
			{GPUs: 2, Milli: 1000, CPUMilli: 2 * cpusPerGPU * 1000, Weight: 0.020},
			{GPUs: 4, Milli: 1000, CPUMilli: 4 * cpusPerGPU * 1000, Weight: 0.021},
			{GPUs: 8, Milli: 1000, CPUMilli: 8 * cpusPerGPU * 1000, Weight: 0.086},
		},
		Gangs: []GangShape{
			{Nodes: 2, Tier: topology.TierLeaf, Weight: 0.0104},
			{Nodes: 4, Tier: topology.TierLeaf, Weight: 0.0035},
		},
	}
	if err := w.Normalize(); err != nil {
		panic(err) // constant weights
	}
	return w
}
