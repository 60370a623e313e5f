package request

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Mode says whether the tier is a hard constraint.
type Mode uint8

// Modes.
const (
	// Required: the gang runs inside one domain of the tier or waits.
	Required Mode = iota
	// Preferred: the tightest domain is tried first; if none can hold the
	// gang now, wider tiers are allowed.
	Preferred
)

func (m Mode) String() string {
	if m == Preferred {
		return "preferred"
	}
	return "required"
}

// Request is one job's placement request.
type Request struct {
	JobID string
	// GPUs is the total number of GPUs (0 for a CPU-only job).
	GPUs int
	// Nodes, when > 0, fixes the number of nodes; GPUsPerNode, when > 0,
	// fixes the GPUs on each node (Slurm's -N and --gpus-per-node). With
	// both zero the engine chooses the split.
	Nodes       int
	GPUsPerNode int
	// Milli is each GPU's share in milli-GPUs (1..1000); 0 means a whole
	// GPU. Shares below 1000 are only valid for single-GPU requests.
	Milli int
	// Models lists acceptable GPU models (Slurm's typed GRES, e.g. "h100");
	// empty accepts any. One gang never mixes models unless MixModels.
	Models    []string
	MixModels bool
	// CPUMilli and MemMiB are the job's totals; a multi-node job needs
	// them split in proportion to its GPUs on each node.
	CPUMilli int64
	MemMiB   int64
	// Tier is the tightest domain tier that must (Required) or should
	// (Preferred) hold the whole gang; 0 means TierCluster (anywhere).
	Tier topology.Tier
	Mode Mode
	// Slice, when > 0, makes every consecutive Slice GPUs of the gang share
	// one NVLink domain (tensor-parallel groups).
	Slice int
	// Partitions the job may run in (empty: any).
	Partitions []string
	// Allowed restricts the job to these nodes (empty: any); Excluded
	// removes nodes.
	Allowed  []string
	Excluded []string
	// TaskGPUs, when > 1, is the GPUs of one task (Slurm's
	// --gpus-per-task): a task's GPUs are on one node, so every node takes
	// a whole number of tasks' GPUs.
	TaskGPUs int
	// WholeNodes says the job takes each of its nodes whole (Slurm's
	// --exclusive): only a node with nothing allocated can take it.
	WholeNodes bool
	// AllMemory says the job takes all of each node's memory (Slurm's
	// --mem=0): only a node with all its memory free can take it.
	AllMemory bool
}

// Share is the per-GPU share in milli-GPUs, with 0 read as a whole GPU.
func (r *Request) Share() int {
	if r.Milli == 0 {
		return 1000
	}
	return r.Milli
}

// EffectiveTier is the requested tier, with the zero value read as "any".
func (r *Request) EffectiveTier() topology.Tier {
	if r.Tier == 0 {
		return topology.TierCluster
	}
	return r.Tier
}

// Validate checks the request on its own terms. Its errors are written for
// the user who typed the options.
func (r *Request) Validate() error {
	switch {
	case r.GPUs < 0:
		return fmt.Errorf("GPU count %d is negative", r.GPUs)
	case r.Nodes < 0 || r.GPUsPerNode < 0:
		return fmt.Errorf("node count and GPUs per node must not be negative")
	case r.Milli < 0 || r.Milli > 1000:
		return fmt.Errorf("GPU share %d is out of range (want 1..1000 milli-GPUs)", r.Milli)
	case r.Milli > 0 && r.Milli < 1000 && r.GPUs != 1:
		return fmt.Errorf("a fractional GPU share (%d milli) needs exactly one GPU, not %d", r.Milli, r.GPUs)
	case r.CPUMilli < 0 || r.MemMiB < 0:
		return fmt.Errorf("CPU and memory requests must not be negative")
	case r.GPUs == 0 && r.CPUMilli == 0:
		return fmt.Errorf("the request asks for no GPUs and no CPUs")
	}
	if r.Nodes > 0 && r.GPUsPerNode > 0 && r.Nodes*r.GPUsPerNode != r.GPUs {
		return fmt.Errorf("%d nodes x %d GPUs per node is %d GPUs, but %d GPUs were asked for", r.Nodes, r.GPUsPerNode, r.Nodes*r.GPUsPerNode, r.GPUs)
	}
	if r.GPUsPerNode > 0 && r.GPUs%r.GPUsPerNode != 0 {
		// Slurm refuses it too (gres_job_state_validate: "--gpus is not
		// multiple of --gpus-per-node")
		k := r.GPUs / r.GPUsPerNode
		fewer := ""
		if k > 0 {
			fewer = fmt.Sprintf("%s %d, ", holds(k), k*r.GPUsPerNode)
		}
		return fmt.Errorf("%d GPUs with %d GPUs per node is not a whole number of nodes (%s%s %d): ask for a multiple of %d GPUs, or leave out --gpus-per-node",
			r.GPUs, r.GPUsPerNode, fewer, holds(k+1), (k+1)*r.GPUsPerNode, r.GPUsPerNode)
	}
	if r.Nodes > 0 && r.GPUs > 0 && r.Nodes > r.GPUs {
		return fmt.Errorf("%d nodes for %d GPUs leaves a node without a GPU", r.Nodes, r.GPUs)
	}
	if r.Slice < 0 {
		return fmt.Errorf("slice=%d is negative", r.Slice)
	}
	if err := r.validateTasks(); err != nil {
		return err
	}
	if r.Slice > 0 {
		if r.GPUs%r.Slice != 0 {
			return fmt.Errorf("slice=%d does not divide the %d GPUs of the gang", r.Slice, r.GPUs)
		}
		// a slice inside a node divides its GPUs; one that spans nodes (of
		// an NVLink block, which the engine checks) is whole nodes of them
		if r.GPUsPerNode > 0 && r.GPUsPerNode%r.Slice != 0 && r.Slice%r.GPUsPerNode != 0 {
			return fmt.Errorf("slice=%d does not divide the %d GPUs per node, nor is it a whole number of such nodes", r.Slice, r.GPUsPerNode)
		}
	}
	if r.Tier > topology.TierCluster {
		return fmt.Errorf("unknown tier %d", r.Tier)
	}
	return nil
}

// validateTasks checks TaskGPUs against the gang and its shape.
func (r *Request) validateTasks() error {
	switch {
	case r.TaskGPUs < 0:
		return fmt.Errorf("GPUs per task %d is negative", r.TaskGPUs)
	case r.TaskGPUs > 1 && r.GPUs%r.TaskGPUs != 0:
		return fmt.Errorf("%d GPUs are not whole tasks of %d GPUs", r.GPUs, r.TaskGPUs)
	case r.TaskGPUs > 1 && r.GPUsPerNode%r.TaskGPUs != 0:
		return fmt.Errorf("%d GPUs per node are not whole tasks of %d GPUs", r.GPUsPerNode, r.TaskGPUs)
	}
	return nil
}

// holds is "1 node holds", "2 nodes hold".
func holds(n int) string {
	if n == 1 {
		return "1 node holds"
	}
	return fmt.Sprintf("%d nodes hold", n)
}

// String renders the request compactly for logs and explanations, e.g.
// `16 GPUs ["h100"] as 2x8, leaf:required, slice=8`.
func (r *Request) String() string {
	s := fmt.Sprintf("%d GPUs", r.GPUs)
	if r.Milli > 0 && r.Milli < 1000 {
		s = fmt.Sprintf("%d milli-GPU", r.Milli)
	}
	if len(r.Models) > 0 {
		s += fmt.Sprintf(" %q", r.Models) // the user's words: quoted
	}
	switch {
	case r.Nodes > 0 && r.GPUsPerNode > 0:
		s += fmt.Sprintf(" as %dx%d", r.Nodes, r.GPUsPerNode)
	case r.Nodes == 1:
		s += " on 1 node"
	case r.Nodes > 1:
		s += fmt.Sprintf(" on %d nodes", r.Nodes)
	case r.GPUsPerNode > 0:
		s += fmt.Sprintf(" with %d per node", r.GPUsPerNode)
	}
	s += ", " + r.EffectiveTier().String() + ":" + r.Mode.String()
	if r.Slice > 0 {
		s += fmt.Sprintf(", slice=%d", r.Slice)
	}
	if r.TaskGPUs > 1 {
		s += fmt.Sprintf(", tasks of %d GPUs", r.TaskGPUs)
	}
	if r.WholeNodes {
		s += ", whole nodes"
	}
	if r.AllMemory {
		s += ", all memory"
	}
	return s
}
