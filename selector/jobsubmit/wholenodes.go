package jobsubmit

import (
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Gangs on whole nodes (Policy.WholeNodeGangs).
//
// A job that gives only a GPU total (--gpus=G) lets Slurm split it over
// any nodes; on a busy cluster a gang then starts over the leftovers of
// several partly used nodes. Such a gang runs on more nodes than it needs,
// and each of them can fail under it; and when one does, the GPUs it
// leaves on the others are holes, which the oldest waiting small jobs
// take at the requeue, before the gang may start again (docs/replay.md,
// why failed gangs miss their tier). With WholeNodeGangs, a gang whose G
// is a multiple of the cluster's GPUs per node, larger than one node,
// is placed as G/k whole nodes of k GPUs (-N G/k --gpus-per-node=k): the
// engine places it on whole free nodes only, the rewrite writes that
// shape (recorded shape=, taken out again by Original like every shape
// gangtopo sets), placed or waiting, so Slurm keeps it when it starts the
// job later. Jobs whose user fixed the nodes, the GPUs per node or per
// task, arrays, and clusters whose nodes differ in GPU count keep
// --gpus=G as submitted.

// uniformNodeGPUs is the GPU count every node with GPUs of c has; 0 when
// they differ (or none has any).
func uniformNodeGPUs(c *topology.Cluster) int {
	k := 0
	for i := range c.Nodes {
		switch g := c.Nodes[i].NumGPUs(); {
		case g == 0:
		case k == 0:
			k = g
		case g != k:
			return 0
		}
	}
	return k
}

// wholeNodes turns req, built from job j, into whole nodes when the policy
// asks for it and the job qualifies (see above); it reports whether it
// did.
func (dc *Decider) wholeNodes(j Job, req *request.Request) bool {
	k := dc.nodeGPUs
	// the request's node count, GPUs per node and per task come from these
	// job fields (gpusOf)
	userShaped := j.MinNodes > 0 || j.TresPerNode != "" || j.TresPerTask != ""
	if !dc.policy.WholeNodeGangs || k == 0 || req.GPUs <= k || req.GPUs%k != 0 || req.Milli > 0 ||
		userShaped || j.ArrayInx != "" || req.Slice > 0 && k%req.Slice != 0 && req.Slice%k != 0 {
		return false
	}
	req.Nodes, req.GPUsPerNode = req.GPUs/k, k
	return true
}

// requestShape writes the shape of a request wholeNodes made (n nodes of
// k GPUs) into a waiting job's fields, as shape does for a placed one; ""
// when the request has none of gangtopo's.
func (dc *Decider) requestShape(p Prepared, out *Result) string {
	req := p.Request
	if !p.WholeNodes || out.MinNodes > 0 {
		return ""
	}
	return setShape(req, req.Nodes, req.GPUsPerNode, out)
}
