package place

import (
	"fmt"
	"sort"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Slices that span nodes: slice=S larger than a node's GPUs, on a cluster
// whose multi-node blocks share one NVLink fabric (a GB200 NVL72 rack).
//
// A slice is S GPUs that talk over NVLink. Inside a node that is an NVLink
// island (intranode); on an NVL72 rack the NVLink domain is the rack, so a
// slice of 16 on four-GPU trays is four trays of one rack. The engine
// places such a gang as a fixed shape, q GPUs on each node (the request's
// GPUs per node, else a whole node; slices span nodes when S > q), so that
// every slice is S/q nodes
// (span) and Slurm can hold it to the same rule with --segment=span under
// topology/block (jobsubmit). Phases:
//
//  1. resolveSpan decides whether slices span nodes and fixes q and span;
//     node-level slicing is then off (a node gives q GPUs or none) and
//     nodes outside every NVLink block give none.
//  2. fitDomain counts, per block, only whole slices: a block with 6
//     usable nodes holds 3 slices of 2 nodes, 1 slice of 4.
//  3. selectIn, above a block, fills blocks with the fewest usable slices
//     first and takes the last by best fit (the smallest block holding the
//     rest), rather than its usual largest-first: between slices the gang
//     talks over the same leaf whichever blocks hold them, so the choice is
//     free to leave whole blocks whole for the next rack-sized gang.

// Span is how a request's slices span nodes: Nodes nodes of PerNode GPUs
// each per slice; zero when they do not (a slice inside one node, or no
// NVLink blocks).
type Span struct {
	PerNode, Nodes int
}

// BlockNodeGPUs is the GPU count of the largest node in an NVLink block of
// c (0: the cluster has no NVLink blocks): what SliceSpan needs of the
// cluster, worked out once per cluster.
func BlockNodeGPUs(c *topology.Cluster) int {
	k := 0
	for _, d := range c.ByTier[topology.TierBlock] {
		dom := &c.Domains[d]
		for n := dom.NodeLo; n < dom.NodeHi && dom.NVLink; n++ {
			k = max(k, c.Nodes[n].NumGPUs())
		}
	}
	return k
}

// SliceSpan is the span the engine gives request r (phase 1 above) on a
// cluster whose BlockNodeGPUs is blockNodeGPUs, for callers without an
// engine: the decision that tells Slurm --segment (jobsubmit). Its error
// is a message for the user.
func SliceSpan(blockNodeGPUs int, r request.Request) (Span, error) {
	return sliceSpan(r, blockNodeGPUs, perNodeOf(r))
}

// sliceSpan: slices of r span nodes when the cluster's NVLink blocks have
// nodes of k GPUs at most (0: none) and a slice is larger than the q GPUs
// a node gives the gang (perNode, else a whole node of k).
func sliceSpan(r request.Request, k, perNode int) (Span, error) {
	q := perNode
	if q == 0 {
		q = k
	}
	if r.Slice <= 1 || k == 0 || r.Slice <= q {
		switch {
		case r.Slice <= 1 || perNode == 0 || perNode%r.Slice == 0:
		case r.GPUsPerNode > 0:
			return Span{}, fmt.Errorf("slice=%d does not divide the %d GPUs per node", r.Slice, r.GPUsPerNode)
		default: // the shape fixes it: -N 2 --gpus=4 gives each node 2
			return Span{}, fmt.Errorf("slice=%d does not divide the %d GPUs each of the %d nodes gets", r.Slice, perNode, r.Nodes)
		}
		return Span{}, nil
	}
	if r.Slice%q != 0 {
		return Span{}, fmt.Errorf("slice=%d spans nodes of the NVLink blocks, so it must be a whole number of nodes of %d GPUs", r.Slice, q)
	}
	return Span{PerNode: q, Nodes: r.Slice / q}, nil
}

// resolveSpan sets p.span and p.spanPer when the request's slices span
// nodes; node-level slicing is then off.
func (p *plan) resolveSpan() error {
	r := p.req
	sp, err := sliceSpan(*r, p.e.maxBlockNodeGPUs, p.perNode())
	if err != nil {
		return err
	}
	if sp.Nodes == 0 {
		if r.Slice > 1 && r.Nodes*r.Slice > r.GPUs {
			// a slice inside a node: every node holds whole slices
			return fmt.Errorf("%d GPUs in slices of %d are %d slices, fewer than the %d nodes asked for: each node holds whole slices",
				r.GPUs, r.Slice, r.GPUs/r.Slice, r.Nodes)
		}
		return nil
	}
	p.span, p.spanPer, p.slice = sp.Nodes, sp.PerNode, 0
	return nil
}

// spanNode says whether node n may hold part of a spanning slice: it is in
// an NVLink block.
func (p *plan) spanNode(n topology.NodeID) bool {
	b := p.e.c.Nodes[n].Up[topology.TierBlock]
	return b != topology.NoDomain && p.e.c.Domains[b].NVLink
}

// spanNodes keeps, of nodes (a domain's usable nodes in node order), only
// whole slices per block: the first span*floor(count/span) of each block.
func (p *plan) spanNodes(nodes []nodeCap) []nodeCap {
	c := p.e.c
	out := nodes[:0]
	for i := 0; i < len(nodes); {
		b := c.Nodes[nodes[i].n].Up[topology.TierBlock]
		j := i
		for j < len(nodes) && c.Nodes[nodes[j].n].Up[topology.TierBlock] == b {
			j++
		}
		keep := (j - i) / p.span * p.span
		out = append(out, nodes[i:i+keep]...)
		i = j
	}
	return out
}

// spanOrder sorts child domains for a spanning gang: the fewest usable
// GPUs first (ties in tree order), so partly used blocks fill before whole
// ones break.
func spanOrder[T any](kids []T, capacity func(T) int) {
	sort.SliceStable(kids, func(a, b int) bool { return capacity(kids[a]) < capacity(kids[b]) })
}
