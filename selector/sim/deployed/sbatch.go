package deployed

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// SbatchJob is the job_desc_msg_t sbatch sends for request r, as the
// job_submit plugin reads it (jobsubmit.Job), written the way a user of a
// Slurm GPU cluster asks for it:
//
//	whole GPUs      --gpus=[model:]G, -N n when the request fixes nodes,
//	                -N n --gpus-per-node=g when it fixes GPUs per node,
//	                --cpus-per-gpu, --mem-per-gpu (rounded up)
//	several models  --gpus=G --constraint="gt_a|gt_b" (the model features
//	                gen features writes; typed GRES names one model only)
//	a share         --gres=shard:N (ShardsPerGPU shards a GPU), -c, --mem,
//	                --constraint with its models' features
//	no GPUs         -n 1 -c C --mem=M
//
// The request's tier and mode become --gang-topology when it has one and
// asks for GPUs (sbatch refuses the option on a job without GPUs), and
// its partitions -p.
func SbatchJob(r *request.Request, prefix string) (jobsubmit.Job, error) {
	if err := r.Validate(); err != nil {
		return jobsubmit.Job{}, fmt.Errorf("deployed: request %s: %w", r.JobID, err)
	}
	j := jobsubmit.Job{Name: r.JobID, Partition: joinComma(r.Partitions)}
	if r.Tier != 0 && r.GPUs > 0 { // the option is for GPU jobs only
		j.GangTopology = request.Option{Tier: r.Tier, Mode: r.Mode, Slice: r.Slice}.String()
	}
	cpus := ceilDiv(r.CPUMilli, 1000)
	switch {
	case r.GPUs == 0 || r.Share() < 1000:
		j.NumTasks, j.CPUsPerTask, j.MinCPUs = 1, uint16(min(max(cpus, 1), 1<<16-1)), uint32(max(cpus, 1))
		j.PnMinMemory = uint64(r.MemMiB)
		j.MinNodes, j.MaxNodes = 1, 1
		if r.GPUs > 0 {
			j.TresPerNode = fmt.Sprintf("gres:shard:%d", r.Share()*ShardsPerGPU/1000)
			if len(r.Models) > 0 {
				j.Features = modelFeatures(prefix, r.Models) // shards carry no GPU type
			}
		}
		return j, nil
	case r.GPUsPerNode > 0:
		j.TresPerNode = gresGPU(r.Models, r.GPUsPerNode)
		j.MinNodes = uint32(r.GPUs / r.GPUsPerNode)
	default:
		j.TresPerJob = gresGPU(r.Models, r.GPUs)
		j.MinNodes = uint32(r.Nodes)
	}
	j.MaxNodes = j.MinNodes
	if len(r.Models) > 1 {
		j.Features = modelFeatures(prefix, r.Models)
	}
	j.MinCPUs = uint32(max(cpus, 1))
	if cpus > 0 {
		j.CPUsPerTres = fmt.Sprintf("gres:gpu:%d", ceilDiv(r.CPUMilli, int64(r.GPUs)*1000))
	}
	if r.MemMiB > 0 {
		j.MemPerTres = fmt.Sprintf("gres:gpu:%d", ceilDiv(r.MemMiB, int64(r.GPUs)))
	}
	return j, nil
}

// gresGPU is a GPU TRES entry, typed when the request names one model.
func gresGPU(models []string, n int) string {
	if len(models) == 1 {
		return fmt.Sprintf("gres:gpu:%s:%d", topology.CanonicalModel(models[0]), n)
	}
	return fmt.Sprintf("gres:gpu:%d", n)
}

// modelFeatures is a constraint on the models' features, spelt as gen
// features writes them (the canonical model name).
func modelFeatures(prefix string, models []string) string {
	s := ""
	for i, m := range models {
		if i > 0 {
			s += "|"
		}
		s += prefix + topology.CanonicalModel(m)
	}
	return s
}

func joinComma(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += x
	}
	return s
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
