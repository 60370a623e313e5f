package stockslurm

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Job is a request in the terms slurmctld sees after sbatch: which GRES
// counter the GPUs were asked with, the node range and the CPUs per GPU.
// The forms matter because Slurm treats them differently: --gpus=G is a
// per-job count (gres_per_job) that Slurm may split over any number of
// nodes, while -N n --gpus-per-node=g and --gres=gpu:K are per-node counts
// (gres_per_node) that every chosen node must hold whole.
type Job struct {
	// GPUsPerJob is --gpus=G; GPUsPerNode is --gpus-per-node=g or
	// --gres=gpu:g. At most one is set; both zero is a CPU-only job.
	GPUsPerJob  int
	GPUsPerNode int
	// MinNodes and MaxNodes are -N min[-max]; zero means "not given"
	// (one node at least, no upper bound).
	MinNodes, MaxNodes int
	// CPUsPerGPU is --cpus-per-gpu (0: not given); CPUsPerTask is
	// --cpus-per-task (the job has one task per node).
	CPUsPerGPU  int
	CPUsPerTask int
	// Share, when 1..999, asks for that many milli-GPUs of one GPU: the
	// fractional requests of the Alibaba traces, modelled as gres/shard.
	Share int
	// Switches is --switches=N (0: none): the job waits rather than span
	// more than N leaf switches. The wait never times out in this model.
	Switches int
	// Models restricts the job to GPUs of these models (typed GRES).
	Models []string
	// Partitions, Allowed and Excluded filter nodes as the request does.
	Partitions, Allowed, Excluded []string
	// Constraint is --constraint, Slurm's feature expression (constraint.go
	// says which forms are modelled); "" for none.
	Constraint string
	// CPUMilli and MemMiB are the job's totals, split over the chosen
	// nodes in proportion to their GPUs in the returned allocation.
	CPUMilli int64
	MemMiB   int64
}

// FromRequest maps an engine request onto the Slurm form a user of stock
// Slurm would have typed: a request with GPUsPerNode is
// `-N n --gpus-per-node=g`, one with only GPUs is `--gpus=G` (with -N when
// Nodes is set), a fractional share is one gres/shard. CPUs become
// --cpus-per-gpu (rounded up to whole CPUs). When switchesFromTier is set,
// a required leaf tier becomes --switches=1, the only topology constraint
// stock Slurm understands; otherwise the tier is ignored, as Slurm would.
func FromRequest(r *request.Request, switchesFromTier bool) (Job, error) {
	if err := r.Validate(); err != nil {
		return Job{}, fmt.Errorf("stockslurm: request %s: %w", r.JobID, err)
	}
	j := Job{
		Models: r.Models, Partitions: r.Partitions, Allowed: r.Allowed, Excluded: r.Excluded,
		CPUMilli: r.CPUMilli, MemMiB: r.MemMiB, CPUsPerTask: 1,
	}
	switch {
	case r.GPUs == 0:
		j.MinNodes, j.MaxNodes = max(r.Nodes, 1), max(r.Nodes, 1)
		j.CPUsPerTask = int(max((r.CPUMilli+999)/1000, 1))
		return j, nil
	case r.Share() < 1000:
		j.Share, j.GPUsPerNode, j.MinNodes, j.MaxNodes = r.Share(), 1, 1, 1
	case r.GPUsPerNode > 0:
		if r.GPUs%r.GPUsPerNode != 0 {
			return Job{}, fmt.Errorf("stockslurm: request %s: %d GPUs are not a whole number of nodes of %d", r.JobID, r.GPUs, r.GPUsPerNode)
		}
		j.GPUsPerNode = r.GPUsPerNode
		j.MinNodes = r.GPUs / r.GPUsPerNode
		j.MaxNodes = j.MinNodes
	default:
		j.GPUsPerJob = r.GPUs
		j.MinNodes, j.MaxNodes = r.Nodes, r.Nodes
	}
	if r.CPUMilli > 0 {
		j.CPUsPerGPU = int((r.CPUMilli + int64(r.GPUs)*1000 - 1) / (int64(r.GPUs) * 1000))
	}
	if switchesFromTier && r.Mode == request.Required && r.Tier == topology.TierLeaf {
		j.Switches = 1
	}
	return j, nil
}

// gpus is the job's total GPU count.
func (j *Job) gpus() int {
	if j.GPUsPerNode > 0 {
		return j.GPUsPerNode * max(j.MinNodes, 1)
	}
	return j.GPUsPerJob
}

// check rejects jobs the model cannot express.
func (j *Job) check() error {
	switch {
	case j.GPUsPerJob < 0 || j.GPUsPerNode < 0 || j.MinNodes < 0 || j.MaxNodes < 0:
		return fmt.Errorf("stockslurm: negative count in job %+v", *j)
	case j.GPUsPerJob > 0 && j.GPUsPerNode > 0:
		return fmt.Errorf("stockslurm: a job has either --gpus or --gpus-per-node, not both")
	case j.MaxNodes > 0 && j.MaxNodes < j.MinNodes:
		return fmt.Errorf("stockslurm: -N %d-%d is an empty range", j.MinNodes, j.MaxNodes)
	case j.Share < 0 || j.Share >= 1000:
		return fmt.Errorf("stockslurm: share %d out of range (want 0, or 1..999 milli-GPUs)", j.Share)
	case j.Share > 0 && (j.GPUsPerNode != 1 || max(j.MinNodes, 1) != 1):
		return fmt.Errorf("stockslurm: a GPU share is one shard on one node")
	}
	return nil
}
