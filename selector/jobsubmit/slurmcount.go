package jobsubmit

import (
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Counting a job's CPUs and memory as Slurm does, and telling "Slurm can
// never run it" from "gangtopo cannot place it".
//
// The engine holds a job to nodes with room for the CPUs and memory it is
// given, so those counts are what Slurm can always start the job with:
// never less than Slurm allocates, and where Slurm may allocate less, the
// larger count (a node with that room still starts the job). Slurm counts
// (validate_job_create_req in src/slurmctld/job_mgr.c, select/cons_tres):
//
//   - CPUs: tasks x --cpus-per-task, at least min_cpus (sbatch's own count)
//     and --mincpus on each node; --cpus-per-gpu x GPUs instead when given.
//     Tasks: -n, else --ntasks-per-node x a fixed node count, else
//     --ntasks-per-gpu x GPUs (0: Slurm's default, in min_cpus).
//   - --overcommit lets tasks share CPUs: 22.05 allocates one CPU per node
//     (-n 65 -N 1 -O runs on a 64-CPU node), 26.05 keeps -c; the full
//     count is an upper bound of both.
//   - memory: --mem per node, --mem-per-cpu x CPUs, --mem-per-gpu x GPUs.
//
// An upper bound is not a refusal: Slurm may run a job whose full count
// no node holds (tasks spread over nodes Slurm picks, overcommitted, on
// nodes without GPUs; memory it does not count unless SelectTypeParameters
// makes it consumable). So when the engine finds a job's CPUs or memory
// can never fit (place.Result.Limit), it is refused only if slurmNever
// says so from lower bounds of what Slurm asks of one node; else it passes
// to Slurm (Rewrite).

// resourcesOf fills CPUMilli and MemMiB (job totals), WholeNodes and
// AllMemory.
func resourcesOf(j Job, r *request.Request) error {
	cpg, err := perGPU(j.CPUsPerTres)
	if err != nil {
		return err
	}
	mpg, err := perGPU(j.MemPerTres)
	if err != nil {
		return err
	}
	nodes := int64(max(r.Nodes, 1))
	cpus := int64(max(j.MinCPUs, 1))
	if t := tasksOf(j, r.GPUs); t > 0 {
		cpus = max(cpus, t*int64(max(j.CPUsPerTask, 1)))
	}
	cpus = max(cpus, int64(j.PnMinCPUs)*nodes)
	if cpg > 0 && r.GPUs > 0 {
		cpus = cpg * int64(r.GPUs)
	}
	r.CPUMilli = cpus * 1000
	switch {
	case mpg > 0 && r.GPUs > 0:
		r.MemMiB = mpg * int64(r.GPUs)
	case j.PnMinMemory&memPerCPU != 0:
		r.MemMiB = int64(j.PnMinMemory&^memPerCPU) * cpus
	case j.PnMinMemory > 0:
		r.MemMiB = int64(j.PnMinMemory) * nodes
	}
	r.WholeNodes = j.Shared == SharedExclusive
	r.AllMemory = j.MemWholeNode
	return nil
}

// tasksOf is the job's task count as Slurm will know it: -n, else
// --ntasks-per-node x a fixed node count, else --ntasks-per-gpu x its
// GPUs; 0 when Slurm picks (one per node, in min_cpus already).
func tasksOf(j Job, gpus int) int64 {
	fixed := j.MinNodes > 0 && (j.MaxNodes == 0 || j.MaxNodes == j.MinNodes)
	switch {
	case j.NumTasks > 0:
		return int64(j.NumTasks)
	case fixed && j.NtasksPerNode > 0:
		return int64(j.MinNodes) * int64(j.NtasksPerNode)
	case j.NtasksPerTres > 0:
		return int64(gpus) * int64(j.NtasksPerTres)
	}
	return 0
}

// slurmNever says whether Slurm's own counting rules job j out on every
// node of its partitions: the refusals gangtopo may make for CPUs or
// memory. Each rule is a lower bound of what Slurm asks of one node, which
// 22.05 and 26.05 both refuse at submit (the "same refusal" rows of
// tests/e2e/resource_options_test.go):
//
//   - one task's CPUs (-c), --mincpus, or --cpus-per-gpu x the GPUs one
//     node must hold, above every such node's CPUs;
//   - --mem above every node's memory, or --mem-per-cpu x one task's CPUs;
//   - without --overcommit, on a fixed node count of N, more tasks than N
//     of the largest nodes hold, or --ntasks-per-node more than one holds.
//
// --mem-per-gpu is no such rule: Slurm counts it only where memory is a
// consumable resource (22.05 runs --gpus=1 --mem-per-gpu above a node's
// memory under SelectTypeParameters=CR_Core).
func (dc *Decider) slurmNever(j Job, r request.Request) bool {
	cpt := int64(max(j.CPUsPerTask, 1))
	perNode := max(r.GPUsPerNode, r.TaskGPUs, 1)
	most := dc.largestNodes(r.Partitions, perNode)
	cpg, _ := perGPU(j.CPUsPerTres)
	switch {
	case most.nodes == 0:
		return false // no node to judge by: Slurm's to say
	case cpt > most.cpus || int64(j.PnMinCPUs) > most.cpus:
		return true
	case cpg > 0 && r.GPUs > 0 && cpg*int64(perNode) > most.gpuCPUs:
		return true
	case j.PnMinMemory&memPerCPU == 0 && int64(j.PnMinMemory) > most.mem:
		return true
	case j.PnMinMemory&memPerCPU != 0 && int64(j.PnMinMemory&^memPerCPU)*cpt > most.mem:
		return true
	}
	if j.Overcommit {
		return false
	}
	if int64(j.NtasksPerNode)*cpt > most.cpus {
		return true
	}
	fixed := j.MinNodes > 0 && j.MaxNodes == j.MinNodes
	return fixed && j.NumTasks > 0 && int64(j.NumTasks) > int64(j.MinNodes)*(most.cpus/cpt)
}

// nodeMost is the most a node of a set offers: CPUs, memory, and CPUs on
// a node with the GPUs a request needs on one node. A node whose CPUs or
// memory the cluster file does not give counts as unlimited.
type nodeMost struct {
	nodes              int
	cpus, mem, gpuCPUs int64
}

// largestNodes is nodeMost over the nodes of the partitions (every node
// when none are named), gpus the GPUs one node must have for gpuCPUs.
func (dc *Decider) largestNodes(partitions []string, gpus int) nodeMost {
	c := dc.cluster
	in := map[int]bool{}
	for _, p := range partitions {
		if i, ok := c.PartitionByName(p); ok {
			in[i] = true
		}
	}
	const unlimited = int64(1) << 62
	var most nodeMost
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if len(in) > 0 && !inAny(n, in) {
			continue
		}
		cpus, mem := int64(n.CPUs), n.MemoryMiB
		if cpus == 0 {
			cpus = unlimited
		}
		if mem == 0 {
			mem = unlimited
		}
		most.nodes++
		most.cpus, most.mem = max(most.cpus, cpus), max(most.mem, mem)
		if n.NumGPUs() >= gpus {
			most.gpuCPUs = max(most.gpuCPUs, cpus)
		}
	}
	return most
}

func inAny(n *topology.Node, parts map[int]bool) bool {
	for _, p := range n.Partitions {
		if parts[int(p)] {
			return true
		}
	}
	return false
}

// slurmMay says, for a job whose CPUs or memory (limit, place.Result.Limit)
// gangtopo finds no node holds and slurmNever does not rule out, why
// Slurm may still run it.
func slurmMay(j Job, r request.Request, limit place.Reason) string {
	fixed := j.MinNodes > 0 && j.MaxNodes == j.MinNodes
	switch {
	case limit == place.ReasonMemory:
		return "Slurm counts a node's share of it, and counts it at all only where memory is a consumable resource"
	case j.Overcommit:
		return "--overcommit lets Slurm run its tasks on fewer CPUs"
	case r.GPUs > 0 && !fixed && j.TresPerTask == "" && j.CPUsPerTres == "":
		return "Slurm may run its tasks on more nodes, with or without GPUs"
	case !fixed:
		return "Slurm may spread its tasks over more nodes"
	}
	return "Slurm counts its CPUs otherwise"
}

// tasksFit says whether Slurm can lay job j's tasks (of a gang of gpus
// GPUs) out on the nodes: on all of them when exact (the shape rewrite's
// -N n: at least one task each), on some of them otherwise (a domain the
// job is bound to). Without --overcommit a node holds at most its CPUs
// over the CPUs per task, and --ntasks-per-node of them must fit each
// node. Slurm runs --gpus=2 -n3 -c40 on three 64-CPU nodes; rewritten to
// -N 2 it refuses it. A node whose CPUs the cluster file does not give
// holds any number.
func (dc *Decider) tasksFit(j Job, gpus int, nodes []topology.NodeID, exact bool) bool {
	t, cpt := tasksOf(j, gpus), int64(max(j.CPUsPerTask, 1))
	if exact && t > 0 && t < int64(len(nodes)) {
		return false
	}
	if j.Overcommit {
		return true
	}
	room := int64(0)
	for _, n := range nodes {
		cpus := int64(dc.cluster.Nodes[n].CPUs)
		if cpus == 0 {
			return true
		}
		if exact && int64(j.NtasksPerNode)*cpt > cpus {
			return false
		}
		room += cpus / cpt
	}
	return t <= room
}
