package slurmstate

import (
	"fmt"
	"sort"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// ProblemKind classifies a disagreement between Slurm and the topology, or
// between two Slurm outputs.
type ProblemKind uint8

// The problem kinds. The first three mean the topology file does not
// describe the cluster Slurm runs (TopologyMismatch); the others are
// differences the snapshot absorbs by taking the more restrictive side.
const (
	NotInTopology    ProblemKind = iota // Slurm reports a node the topology lacks
	NotInSlurm                          // the topology has a node Slurm does not report
	GPUCountDiffers                     // configured GPUs differ; the surplus is marked busy
	GPUModelDiffers                     // Slurm's GRES type is not the topology's model
	CPUCountDiffers                     // the smaller count is used
	MemoryDiffers                       // the smaller amount is used
	UnattributedGPUs                    // Slurm counts more GPUs in use than its jobs list; the rest are marked busy
	JobOffTopology                      // a job holds a node or GPU index the topology lacks
	JobNotConfirmed                     // a job read from scontrol's text claims what its node does not show; left out
	JobUnreadable                       // a job record of scontrol's text does not parse; left out
	FeaturesDiffer                      // the node's gangtopo features are not its domains' in the cluster file
	numProblemKinds
)

var problemNames = [numProblemKinds]string{
	"node in Slurm but not in the topology",
	"node in the topology but not in Slurm",
	"GPU count differs",
	"GPU model differs",
	"CPU count differs",
	"memory differs",
	"GPUs in use that no job accounts for",
	"job outside the topology",
	"job left out: scontrol's text claims what the node does not show",
	"job left out: its scontrol record does not parse",
	"gangtopo node features differ from the cluster file, rewrite them with gangtopo gen features",
}

// String names the kind.
func (k ProblemKind) String() string {
	if k < numProblemKinds {
		return problemNames[k]
	}
	return fmt.Sprintf("problem(%d)", uint8(k))
}

// Label is a short metric label for the kind.
func (k ProblemKind) Label() string {
	return [numProblemKinds]string{"not_in_topology", "not_in_slurm", "gpu_count", "gpu_model",
		"cpu_count", "memory", "unattributed_gpus", "job_off_topology", "job_unconfirmed", "job_unreadable", "features"}[k]
}

// ProblemKinds lists every kind, for metrics.
func ProblemKinds() []ProblemKind {
	out := make([]ProblemKind, numProblemKinds)
	for i := range out {
		out[i] = ProblemKind(i)
	}
	return out
}

// Problem is one finding about one node (Node is empty for an unreadable
// job record).
type Problem struct {
	Kind   ProblemKind
	Node   string
	Detail string // without the node's name, so equal details group
}

// Report lists what building a snapshot found.
type Report struct {
	Problems []Problem
}

func (r *Report) add(k ProblemKind, node, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Kind: k, Node: node, Detail: fmt.Sprintf(format, args...)})
}

// Count returns how many nodes have a problem of kind k.
func (r *Report) Count(k ProblemKind) int {
	n := 0
	for _, p := range r.Problems {
		if p.Kind == k {
			n++
		}
	}
	return n
}

// TopologyMismatch reports whether Slurm's node set or GPU counts differ
// from the topology's: the topology file needs fixing.
func (r *Report) TopologyMismatch() bool {
	return r.Count(NotInTopology)+r.Count(NotInSlurm)+r.Count(GPUCountDiffers) > 0
}

// Lines summarises the problems, one line per kind and detail with the
// nodes compressed into a host list: "GPU count differs (Slurm 4, topology
// 8) on 2 nodes: node[03-04]".
func (r *Report) Lines() []string {
	type group struct {
		kind   ProblemKind
		detail string
	}
	nodes := map[group][]string{}
	var order []group
	for _, p := range r.Problems {
		g := group{p.Kind, p.Detail}
		if _, ok := nodes[g]; !ok {
			order = append(order, g)
		}
		nodes[g] = append(nodes[g], p.Node)
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].kind < order[b].kind })
	out := make([]string, 0, len(order))
	for _, g := range order {
		d := ""
		if g.detail != "" {
			d = " (" + g.detail + ")"
		}
		ns := nodes[g]
		if ns[0] == "" { // not about a node (an unreadable job record)
			out = append(out, fmt.Sprintf("%s%s", g.kind, d))
			continue
		}
		out = append(out, fmt.Sprintf("%s%s on %d node%s: %s", g.kind, d, len(ns), plural(len(ns)), hostlist.Compress(ns)))
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
