package jobsubmit

import (
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Slurm's own block rule, where Slurm has it.
//
// On a cluster of NVLink racks (GB200 NVL72) that runs Slurm's
// topology/block over the same racks (Slurm 24.05+, `gangtopo gen topology
// --plugin block`, gangtopo.yaml slurm_topology: block), the rewrite also
// writes the NVLink rule in Slurm's terms, --segment (job_desc_msg_t
// segment_size): every segment of that many nodes lies inside one block.
// Slurm then keeps the rule at schedule time whatever happened since the
// submit decision; the features binding (rewrite.go) still says which
// domains, best first, so gangtopo's least-fragmenting choice stands:
//
//   - slice=S that spans nodes (place.SliceSpan: S/q nodes of q GPUs):
//     segment = S/q. The gang is -N n --gpus-per-node=q (the shape the
//     engine always gives such a gang; for a waiting one, spanShape).
//   - tier nvlink (on NVLink blocks) or block, n nodes: segment = n, the
//     whole gang in one block.
//
// Slurm needs a node count that the segment divides, and a fixed count of
// GPUs per node to keep S GPUs in S/q nodes, so a job without both (the
// user's --gpus=G with -N, a one-node job) gets no segment; nor does one
// whose user gave --segment.

// segment sets out's SegmentSize and records it in d (see above).
func (dc *Decider) segment(j Job, req request.Request, out *Result, d *Decision) {
	if !dc.policy.SlurmBlock || j.SegmentSize > 0 {
		return
	}
	nodes := out.MinNodes
	if nodes == 0 && j.MinNodes == j.MaxNodes {
		nodes = j.MinNodes
	}
	perNode := j.TresPerNode != "" || out.TresPerNode != nil && *out.TresPerNode != ""
	if nodes < 2 || !perNode {
		return
	}
	seg := uint32(0)
	if sp, err := place.SliceSpan(dc.blockNodeGPUs, req); err == nil && sp.Nodes > 0 {
		seg = uint32(sp.Nodes)
	} else if t := req.EffectiveTier(); t == topology.TierBlock || dc.nvlinkBlocks(t) {
		seg = nodes
	}
	if seg == 0 || nodes%seg != 0 {
		return
	}
	out.SegmentSize, d.Segment = seg, int(seg)
}

// spanShape gives a waiting gang whose slices span nodes the shape the
// engine would place it in, n x q (q GPUs on each of n nodes), when its
// user fixed neither: Slurm, free to split --gpus=G, would break slices.
// It returns the shape ("" when unchanged).
func (dc *Decider) spanShape(j Job, req request.Request, out *Result) string {
	if j.TresPerNode != "" || j.TresPerTask != "" || j.MinNodes > 0 || out.MinNodes > 0 {
		return ""
	}
	sp, err := place.SliceSpan(dc.blockNodeGPUs, req)
	if err != nil || sp.Nodes == 0 || req.GPUs%sp.PerNode != 0 {
		return ""
	}
	return setShape(req, req.GPUs/sp.PerNode, sp.PerNode, out)
}
