package jobsubmit

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
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
// model. CPUs come from --cpus-per-gpu, else from the task counts; memory
// from --mem-per-gpu or --mem (per node).
func buildRequest(j Job, o request.Option) (request.Request, error) {
	var r request.Request
	o.Apply(&r)
	if j.TresPerSocket != "" {
		return r, &unsupportedError{"--gpus-per-socket"}
	}
	if j.MaxNodes > j.MinNodes && j.MinNodes > 0 {
		return r, &unsupportedError{fmt.Sprintf("a node count range (-N %d-%d)", j.MinNodes, j.MaxNodes)}
	}
	if err := gpusOf(j, &r); err != nil {
		return r, err
	}
	if err := resourcesOf(j, &r); err != nil {
		return r, err
	}
	r.Partitions = request.SplitList(j.Partition)
	var err error
	if r.Allowed, err = expandNodes("--nodelist", j.ReqNodes); err != nil {
		return r, err
	}
	if r.Excluded, err = expandNodes("--exclude", j.ExcNodes); err != nil {
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
		if j.NumTasks == 0 {
			return &unsupportedError{"--gpus-per-task without -n/--ntasks"}
		}
		r.GPUs, r.Nodes = perTask.Count*int(j.NumTasks), nodes
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

func expandNodes(flag, expr string) ([]string, error) {
	if expr == "" {
		return nil, nil
	}
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, expr, err)
	}
	return names, nil
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
