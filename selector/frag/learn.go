package frag

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Learner learns a cluster's typical request mix from the jobs it runs.
//
// Fragmentation is only as good as the workload it is measured against:
// a 190-milli remnant is waste on a cluster of whole-GPU jobs and a
// perfect fit on one full of 160-milli shares, and a node's free CPUs
// strand GPUs only if the jobs to come want more CPUs per GPU than are
// left. A fixed mix (PhillyPrior) is right for the cluster it came from
// only. The learner keeps the shapes of the last Window distinct jobs it
// is shown (the controller shows it every job it sees running), and
// Workload turns them into a mix the way FGD picks its typical pods:
// single-node shapes by popularity until they cover the coverage share of
// those jobs (Typical), gang shapes (whole nodes in one domain) by count,
// each part weighted by its share of the jobs. A new cluster starts from
// PhillyPrior until MinJobs jobs have been seen.
type Learner struct {
	window int
	keys   []string // distinct jobs, oldest first
	seen   map[string]Observation
}

// Observation is what the learner takes from one job.
type Observation struct {
	// Node is a single-node job's shape, or for a gang what it takes of
	// each node (GPUs, share, CPUs per node, models).
	Node NodeShape
	// Nodes is the job's node count (1 or 0: a single-node job); a gang's
	// Tier is the domain it asked for (TierLeaf when it did not say).
	Nodes int
	Tier  topology.Tier
}

// MinJobs is how many jobs the learner needs before its mix replaces the
// prior.
const MinJobs = 200

// NewLearner keeps the last window distinct jobs.
func NewLearner(window int) *Learner {
	return &Learner{window: max(window, 1), seen: map[string]Observation{}}
}

// Observe records job key's shape, once: a job seen again (every poll
// while it runs) does not count twice. It reports whether the job was new.
func (l *Learner) Observe(key string, o Observation) bool {
	if _, ok := l.seen[key]; ok {
		return false
	}
	l.seen[key] = o
	l.keys = append(l.keys, key)
	if len(l.keys) > l.window {
		delete(l.seen, l.keys[0])
		l.keys = l.keys[1:]
	}
	return true
}

// Len is the number of jobs the mix is learned from.
func (l *Learner) Len() int { return len(l.keys) }

// Workload is the learned mix; ok is false (and the mix the prior) while
// fewer than MinJobs jobs have been seen.
func (l *Learner) Workload(coverage float64, prior Workload) (w Workload, ok bool, err error) {
	if len(l.keys) < MinJobs {
		return prior, false, nil
	}
	var single []NodeShape
	type gangKey struct {
		nodes  int
		tier   topology.Tier
		models topology.ModelSet
	}
	gangs := map[gangKey]int{}
	var gangOrder []gangKey
	for _, k := range l.keys {
		o := l.seen[k]
		if o.Nodes <= 1 {
			single = append(single, o.Node)
			continue
		}
		t := o.Tier
		if t == 0 {
			t = topology.TierLeaf
		}
		gk := gangKey{o.Nodes, t, o.Node.Models}
		if gangs[gk] == 0 {
			gangOrder = append(gangOrder, gk)
		}
		gangs[gk]++
	}
	total := float64(len(l.keys))
	if len(single) > 0 {
		w = Typical(single, coverage)
		for i := range w.Node {
			w.Node[i].Weight *= float64(len(single)) / total
		}
	}
	for _, gk := range gangOrder {
		w.Gangs = append(w.Gangs, GangShape{Nodes: gk.nodes, Tier: gk.tier, Models: gk.models, Weight: float64(gangs[gk]) / total})
	}
	if err := w.Normalize(); err != nil {
		return prior, false, fmt.Errorf("learned mix: %w", err)
	}
	return w, true, nil
}

// TypicalCoverage is the share of the jobs a learned mix's single-node
// shapes cover: FGD's podPopularityThreshold (95%).
const TypicalCoverage = 0.95
