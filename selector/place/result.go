package place

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Status is the outcome of a placement.
type Status uint8

// Statuses.
const (
	// Placed: Alloc holds the whole gang.
	Placed Status = iota + 1
	// NoFit: the request is valid and fits the cluster, but not now.
	NoFit
	// Impossible: the request can never fit this cluster (even empty).
	Impossible
	// Invalid: the request contradicts itself or names unknown things.
	Invalid
)

func (s Status) String() string {
	switch s {
	case Placed:
		return "placed"
	case NoFit:
		return "no-fit"
	case Impossible:
		return "impossible"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Reason names why a node or domain was passed over.
type Reason string

// Rejection reasons, counted per candidate in Result.Rejected.
const (
	ReasonState     Reason = "node not usable (drain/down/unknown)"
	ReasonPartition Reason = "not in the requested partitions"
	ReasonExcluded  Reason = "excluded or not in the allowed node list"
	ReasonModel     Reason = "no GPU of the requested model"
	ReasonGPUs      Reason = "not enough free GPUs (or shares)"
	ReasonCPU       Reason = "not enough free CPUs"
	ReasonMemory    Reason = "not enough free memory"
	ReasonDomain    Reason = "domain too small for the gang now"
	ReasonBusy      Reason = "not wholly free (--exclusive, --mem=0)"
)

// reasons indexes the counters a plan keeps while scanning (a map
// increment per node would cost more than the rest of the scan).
var reasons = [...]Reason{ReasonState, ReasonPartition, ReasonExcluded, ReasonModel, ReasonGPUs, ReasonCPU, ReasonMemory, ReasonDomain, ReasonBusy}

type reasonCounts [len(reasons)]int

func (rc *reasonCounts) add(r Reason) {
	for i, x := range reasons {
		if x == r {
			rc[i]++
			return
		}
	}
}

func (rc *reasonCounts) toMap() map[Reason]int {
	m := map[Reason]int{}
	for i, n := range rc {
		if n > 0 {
			m[reasons[i]] = n
		}
	}
	return m
}

// Result is a placement decision and its explanation.
type Result struct {
	Status Status
	Alloc  occupancy.Allocation
	// Model is the GPU model of the gang (when one was required or chosen).
	Model string
	// Domain is the tightest domain holding every allocated GPU, and Tier
	// its tier ("tier reached").
	Domain topology.DomainID
	Tier   topology.Tier
	// Widened is true when a Preferred request went wider than its tier.
	Widened bool
	// Alternatives are other domains of the same tier that could hold the
	// gang now, best first (the job_submit plugin offers them to Slurm).
	Alternatives []topology.DomainID
	// Message is one line for the user: where it went, or why not.
	Message string
	// Rejected counts the candidates (nodes and domains) passed over, by
	// reason.
	Rejected map[Reason]int
	// Candidates are the best candidates of the deciding tier with their
	// scores, the winner first.
	Candidates []Candidate
	// Limit, for an Impossible request, names what rules it out when its
	// GPUs alone would fit: ReasonCPU or ReasonMemory, the CPUs and memory
	// the request counts, which only the caller knows to be exact (Slurm
	// may count a job's CPUs otherwise: tasks on nodes without GPUs,
	// --overcommit). "" when the GPUs, the shape or the tier rule it out.
	Limit Reason
}

// Candidate is one possible placement with its score.
type Candidate struct {
	Domain topology.DomainID
	Tier   topology.Tier
	Nodes  []NodeShare
	Score  Score
	pass   topology.ModelSet
}

// NodeShare is how many GPUs a candidate takes from a node.
type NodeShare struct {
	Node topology.NodeID
	GPUs int
}

// RejectedSorted lists the rejection counts, largest first.
func (r *Result) RejectedSorted() []ReasonCount {
	out := make([]ReasonCount, 0, len(r.Rejected))
	for k, v := range r.Rejected {
		out = append(out, ReasonCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// ReasonCount is one line of a rejection summary.
type ReasonCount struct {
	Reason Reason
	Count  int
}

// NodeNames lists the allocation's nodes by name, compactly.
func NodeNames(c *topology.Cluster, a occupancy.Allocation) []string {
	out := make([]string, len(a.Nodes))
	for i, na := range a.Nodes {
		out[i] = c.Nodes[na.Node].Name
	}
	return out
}

// Describe renders an allocation as "node01:0-3,node02:0-7".
func Describe(c *topology.Cluster, a occupancy.Allocation) string {
	parts := make([]string, len(a.Nodes))
	for i, na := range a.Nodes {
		parts[i] = c.Nodes[na.Node].Name + ":" + IndexList(na.GPUs)
	}
	return strings.Join(parts, ",")
}

// IndexList renders ascending indices as ranges: [0 1 2 5] -> "0-2,5".
func IndexList(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(idx[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
