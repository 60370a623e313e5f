package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// unsupportedError marks a job shape gangtopo does not translate (GPUs per
// socket, a node-count range): the job passes untouched, with a log line.
type unsupportedError struct{ what string }

func (e *unsupportedError) Error() string { return e.what + " is not handled by gangtopo" }

// buildRequest translates a job into an engine request.
//
// GPUs: --gpus=G (tres_per_job) is a gang of G; --gpus-per-node=g or
// --gres=gpu:g (tres_per_node) with -N n is n x g; --gpus-per-task=t with
// -n k is k*t GPUs split as the engine likes. The typed GRES (h100) is the
// model, or a constraint naming GPU model features (gt_a100|gt_h100, as
// gen features writes them) is the set of models. --gres=shard:N is a
// share of one GPU (N of shardsPerGPU). A job without GPUs (jobs: all) is
// a CPU-only request on one node. CPUs come from --cpus-per-gpu, else
// from the task counts; memory from --mem-per-gpu or --mem (per node).
func (dc *Decider) buildRequest(j Job, o request.Option) (request.Request, error) {
	var r request.Request
	o.Apply(&r)
	if j.TresPerSocket != "" {
		return r, &unsupportedError{"--gpus-per-socket"}
	}
	if j.MaxNodes > j.MinNodes && j.MinNodes > 0 {
		return r, &unsupportedError{fmt.Sprintf("a node count range (-N %d-%d)", j.MinNodes, j.MaxNodes)}
	}
	var err error
	switch {
	case !asksGPUs(j):
		err = cpuOnly(j, &r)
	case dc.policy.ShardsPerGPU > 0 && hasShards(j):
		err = shardsOf(j, dc.policy.ShardsPerGPU, &r)
	default:
		err = gpusOf(j, &r)
	}
	if err != nil {
		return r, err
	}
	if len(r.Models) == 0 {
		r.Models = dc.modelConstraint(j.Features)
	}
	if err := resourcesOf(j, &r); err != nil {
		return r, err
	}
	r.Partitions = request.SplitList(jobPartition(j))
	if r.Allowed, err = expandNodes("--nodelist", j.ReqNodes, dc.nodeBound); err != nil {
		return r, err
	}
	if r.Excluded, err = expandNodes("--exclude", j.ExcNodes, dc.nodeBound); err != nil {
		return r, err
	}
	return r, nil
}

// gpusOf fills GPUs, Nodes, GPUsPerNode and Models.
func gpusOf(j Job, r *request.Request) error {
	perJob, hasJob, err := parseGPUTres(j.TresPerJob)
	if err != nil {
		return err
	}
	perNode, hasNode, err := parseGPUTres(j.TresPerNode)
	if err != nil {
		return err
	}
	perTask, hasTask, err := parseGPUTres(j.TresPerTask)
	if err != nil {
		return err
	}
	nodes := int(j.MinNodes)
	switch {
	case hasJob:
		r.GPUs, r.Nodes = perJob.Count, nodes
		if hasNode {
			r.GPUsPerNode = perNode.Count
		}
	case hasNode:
		r.Nodes = max(nodes, 1)
		r.GPUsPerNode = perNode.Count
		r.GPUs = r.Nodes * perNode.Count
	case hasTask:
		tasks, err := taskCount(j)
		if err != nil {
			return err
		}
		r.GPUs, r.Nodes = perTask.Count*tasks, nodes
	}
	for _, t := range []gpuTres{perJob, perNode, perTask} {
		if t.Model != "" && (len(r.Models) == 0 || r.Models[0] != t.Model) {
			r.Models = append(r.Models, t.Model)
		}
	}
	if len(r.Models) > 1 {
		return fmt.Errorf("GPU models %q and %q differ between --gpus options", r.Models[0], r.Models[1])
	}
	if r.GPUs == 0 {
		return &unsupportedError{"a GPU request of 0 GPUs"}
	}
	return nil
}

// taskCount is the job's task count for --gpus-per-task, as Slurm sets it
// when -n is not given (gres_job_state_validate in src/common/gres.c): a
// fixed node count times --ntasks-per-node, else one task per node; one
// task without a node count.
func taskCount(j Job) (int, error) {
	fixed := j.MinNodes > 0 && (j.MaxNodes == 0 || j.MaxNodes == j.MinNodes)
	switch {
	case j.NumTasks > 0:
		return int(j.NumTasks), nil
	case fixed && j.NtasksPerNode > 0:
		return int(j.MinNodes) * int(j.NtasksPerNode), nil
	case fixed && j.CPUsPerTask == 0:
		return int(j.MinNodes), nil
	case j.MinNodes == 0 && j.NtasksPerNode == 0:
		return 1, nil
	}
	return 0, &unsupportedError{"--gpus-per-task without -n/--ntasks (with -c or a node range Slurm's task count is not known at submit)"}
}

// hasTres says whether the job asks for any GRES at all.
func hasTres(j Job) bool {
	return j.TresPerJob+j.TresPerNode+j.TresPerSocket+j.TresPerTask != ""
}

// cpuOnly fills a request for a job without GPUs: one node (a CPU job
// over several is left to Slurm).
func cpuOnly(j Job, r *request.Request) error {
	if j.MinNodes > 1 {
		return &unsupportedError{fmt.Sprintf("a CPU-only job over %d nodes", j.MinNodes)}
	}
	r.Nodes = 1
	return nil
}

// hasShards says whether the job asks for GPU shares (gres/shard).
func hasShards(j Job) bool {
	for _, s := range []string{j.TresPerJob, j.TresPerNode} {
		if _, ok := shardCount(s); ok {
			return true
		}
	}
	return false
}

// shardCount finds "gres:shard:N" (or gres/shard=N) in a TRES list.
func shardCount(s string) (int, bool) {
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimPrefix(strings.TrimSpace(item), "gres:")
		item = strings.TrimPrefix(item, "gres/")
		rest, ok := strings.CutPrefix(item, "shard")
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, ":"), "=")
		if rest == "" {
			return 1, true
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// shardsOf fills a request for --gres=shard:N: a share of one GPU on one
// node, N shards of perGPU.
func shardsOf(j Job, perGPU int, r *request.Request) error {
	n, _ := shardCount(j.TresPerNode)
	if n == 0 {
		n, _ = shardCount(j.TresPerJob)
	}
	if j.MinNodes > 1 {
		return &unsupportedError{fmt.Sprintf("GPU shards on %d nodes", j.MinNodes)}
	}
	if n > perGPU {
		return &unsupportedError{fmt.Sprintf("%d shards, more than one GPU's %d", n, perGPU)}
	}
	r.GPUs, r.Nodes, r.Milli = 1, 1, (n*1000+perGPU-1)/perGPU
	return nil
}

// modelConstraint reads a constraint that only chooses among GPU models:
// one or several GPU model features (the prefix and a model name of the
// cluster, as gen features writes them) joined by |. Anything else says
// nothing about models (nil): Slurm enforces it as written.
func (dc *Decider) modelConstraint(features string) []string {
	if features == "" || strings.ContainsAny(features, "&()[]*") {
		return nil
	}
	var models []string
	for _, f := range strings.Split(features, "|") {
		name, ok := strings.CutPrefix(strings.TrimSpace(f), dc.policy.FeaturePrefix)
		if !ok || dc.policy.FeaturePrefix == "" {
			return nil
		}
		m, found := dc.cluster.ModelByName(name)
		if !found {
			return nil
		}
		models = append(models, dc.cluster.ModelName(m))
	}
	return models
}

// resourcesOf fills CPUMilli and MemMiB (job totals).
func resourcesOf(j Job, r *request.Request) error {
	cpg, err := perGPU(j.CPUsPerTres)
	if err != nil {
		return err
	}
	mpg, err := perGPU(j.MemPerTres)
	if err != nil {
		return err
	}
	cpus := int64(max(j.MinCPUs, 1))
	if j.NumTasks > 0 {
		cpus = max(cpus, int64(j.NumTasks)*int64(max(j.CPUsPerTask, 1)))
	}
	if cpg > 0 {
		cpus = cpg * int64(r.GPUs)
	}
	r.CPUMilli = cpus * 1000
	nodes := int64(max(r.Nodes, 1))
	switch {
	case mpg > 0:
		r.MemMiB = mpg * int64(r.GPUs)
	case j.PnMinMemory&memPerCPU != 0:
		r.MemMiB = int64(j.PnMinMemory&^memPerCPU) * cpus
	case j.PnMinMemory > 0:
		r.MemMiB = int64(j.PnMinMemory) * nodes
	}
	return nil
}

func tierList(c *topology.Cluster) string {
	var names []string
	for _, t := range c.PresentTiers() {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

func joinOr(xs []string) string {
	switch len(xs) {
	case 0:
		return "no GPUs"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// GPUCount is the GPUs a job asks for (--gpus, --gpus-per-node x nodes,
// --gpus-per-task x tasks; 0 without GPUs): what the quota counts of a
// waiting job.
func GPUCount(j Job) (int, error) {
	if !asksGPUs(j) {
		return 0, nil
	}
	var r request.Request
	if err := gpusOf(j, &r); err != nil {
		return 0, err
	}
	return r.GPUs, nil
}
