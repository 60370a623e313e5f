package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// unsupportedError marks a job shape gangtopo does not translate (GPUs per
// socket, a node-count range; options.go): the job passes untouched, with
// a log line. why, when given, says what gangtopo would get wrong.
type unsupportedError struct{ what, why string }

func (e *unsupportedError) Error() string {
	if e.why != "" {
		return e.what + " is not handled by gangtopo (" + e.why + ")"
	}
	return e.what + " is not handled by gangtopo"
}

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
	if err := dc.unmodelled(j); err != nil {
		return r, err
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
	if err := unevenSplit(r); err != nil {
		return r, err
	}
	if err := unmodelledShape(j, r); err != nil {
		return r, err
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
		if perTask.Count > 1 {
			r.TaskGPUs = perTask.Count
		}
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
		return &unsupportedError{what: "a GPU request of 0 GPUs"}
	}
	return nil
}

// unevenSplit passes a GPU total over a fixed node count that the engine
// cannot split as Slurm does: Slurm runs -N 3 --gpus=7 as 3+2+2, and 3
// tasks of 2 GPUs on -N 2 as 4+2; the engine places a fixed node count
// only as equal whole tasks per node.
func unevenSplit(r request.Request) error {
	if r.Nodes <= 1 || r.GPUsPerNode > 0 || r.GPUs < r.Nodes {
		return nil // (fewer GPUs than nodes: refused as Slurm does, Validate)
	}
	if per := r.GPUs / r.Nodes; r.GPUs%r.Nodes != 0 || per%max(r.TaskGPUs, 1) != 0 {
		return &unsupportedError{what: fmt.Sprintf("%d GPUs over exactly %d nodes", r.GPUs, r.Nodes),
			why: "Slurm splits them unevenly, the engine evenly"}
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
	return 0, &unsupportedError{what: "--gpus-per-task without -n/--ntasks (with -c or a node range Slurm's task count is not known at submit)"}
}

// hasTres says whether the job asks for any GRES at all.
func hasTres(j Job) bool {
	return j.TresPerJob+j.TresPerNode+j.TresPerSocket+j.TresPerTask != ""
}

// cpuOnly fills a request for a job without GPUs: one node (a CPU job
// over several is left to Slurm).
func cpuOnly(j Job, r *request.Request) error {
	if j.MinNodes > 1 {
		return &unsupportedError{what: fmt.Sprintf("a CPU-only job over %d nodes", j.MinNodes)}
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
		return &unsupportedError{what: fmt.Sprintf("GPU shards on %d nodes", j.MinNodes)}
	}
	if n > perGPU {
		return &unsupportedError{what: fmt.Sprintf("%d shards, more than one GPU's %d", n, perGPU)}
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
