package fgd

import (
	"fmt"
	"sort"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Node is one server of a trace cluster.
type Node struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	GPUs     int
	Model    string // GPU model; empty for a CPU-only node
}

// Pod is one request of a trace: GPUs GPUs of Milli milli-GPUs each (a
// share below 1000 only with one GPU; GPUs and Milli 0 for a CPU-only pod),
// CPU and memory, on one of Models (empty: any). Spec is the text of the
// model constraint, which FGD uses in a pod's type.
type Pod struct {
	Name     string
	CPUMilli int64
	MemMiB   int64
	GPUs     int
	Milli    int
	Models   []string
	Spec     string
}

// Job is a pod as the policies see it: its request in the cluster's terms.
type Job struct {
	Pod      *Pod
	CPUMilli int64
	MemMiB   int64
	GPUs     int
	Milli    int               // per GPU; 0 for a CPU-only job
	Models   topology.ModelSet // accepted models; 0: any
	// Type numbers the distinct (CPU, memory, GPUs, share, models)
	// requests of the workload densely from 0: jobs of one type place
	// alike, so policies may cache per type.
	Type int
	// Req is the same request for engines that take a request.Request.
	Req request.Request
}

// TotalMilli is the job's GPU request in milli-GPUs.
func (j *Job) TotalMilli() int64 { return int64(j.GPUs) * int64(j.Milli) }

// Workload is a trace prepared for one cluster, shared read-only by runs.
type Workload struct {
	Name    string
	Cluster *topology.Cluster
	Jobs    []Job // in trace order
	// Types is the number of distinct job types.
	Types int
	// Typical is FGD's target workload: the pod types covering 95% of the
	// pods, CPU-only ones included. The fragmentation metrics and the FGD
	// policy measure against it.
	Typical frag.Workload
	// byName lists job indices sorted by pod name (the FGD simulator's
	// order before shuffling); nodesByName lists node ids by name.
	byName      []int
	nodesByName []topology.NodeID
	capacity    int64 // GPU milli of the cluster
}

// TypicalCoverage is FGD's podPopularityThreshold (95%).
const TypicalCoverage = 0.95

// BuildCluster turns a node list into a flat topology: every node under one
// leaf, in list order, each GPU of the node's model.
func BuildCluster(name string, nodes []Node) (*topology.Cluster, error) {
	spec := topology.Spec{Name: name}
	leaf := topology.LeafSpec{Name: name + "-leaf"}
	for _, n := range nodes {
		if n.CPUMilli%1000 != 0 {
			return nil, fmt.Errorf("node %s: %d milli-CPUs is not a whole number of CPUs", n.Name, n.CPUMilli)
		}
		ns := topology.NodeSpec{Name: n.Name, CPUs: int(n.CPUMilli / 1000), MemoryMiB: n.MemMiB}
		for g := 0; g < n.GPUs; g++ {
			ns.GPUs = append(ns.GPUs, topology.GPUSpec{Model: n.Model, NUMA: -1, PCIeSwitch: -1})
		}
		spec.Nodes = append(spec.Nodes, ns)
		leaf.Nodes = append(leaf.Nodes, n.Name)
	}
	spec.Leaves = []topology.LeafSpec{leaf}
	return topology.Build(spec)
}

// Prepare checks pods against cluster c and turns them into a Workload.
func Prepare(name string, c *topology.Cluster, pods []Pod) (*Workload, error) {
	w := &Workload{Name: name, Cluster: c, Jobs: make([]Job, len(pods))}
	types := map[jobKey]int{}
	shapes := make([]frag.NodeShape, len(pods))
	for i := range pods {
		j, err := newJob(c, &pods[i])
		if err != nil {
			return nil, err
		}
		k := jobKey{j.CPUMilli, j.MemMiB, j.GPUs, j.Milli, j.Models}
		t, ok := types[k]
		if !ok {
			t = len(types)
			types[k] = t
		}
		j.Type = t
		w.Jobs[i] = j
		shapes[i] = fgdShape(&j)
	}
	w.Types = len(types)
	w.Typical = frag.Typical(shapes, TypicalCoverage)
	w.byName = make([]int, len(pods))
	for i := range w.byName {
		w.byName[i] = i
	}
	sort.SliceStable(w.byName, func(a, b int) bool { return pods[w.byName[a]].Name < pods[w.byName[b]].Name })
	w.nodesByName = make([]topology.NodeID, len(c.Nodes))
	for i := range w.nodesByName {
		w.nodesByName[i] = topology.NodeID(i)
	}
	sort.SliceStable(w.nodesByName, func(a, b int) bool {
		return c.Nodes[w.nodesByName[a]].Name < c.Nodes[w.nodesByName[b]].Name
	})
	w.capacity = int64(len(c.GPUs)) * 1000
	return w, nil
}

type jobKey struct {
	cpu, mem    int64
	gpus, milli int
	models      topology.ModelSet
}

func newJob(c *topology.Cluster, p *Pod) (Job, error) {
	j := Job{Pod: p, CPUMilli: p.CPUMilli, MemMiB: p.MemMiB, GPUs: p.GPUs, Milli: p.Milli}
	switch {
	case p.GPUs < 0 || p.Milli < 0 || p.Milli > 1000 || p.CPUMilli < 0 || p.MemMiB < 0:
		return j, fmt.Errorf("pod %s: negative request or a share above 1000", p.Name)
	case (p.GPUs == 0) != (p.Milli == 0):
		return j, fmt.Errorf("pod %s: %d GPUs of %d milli-GPUs (a GPU pod needs both, a CPU pod neither)", p.Name, p.GPUs, p.Milli)
	case p.GPUs > 1 && p.Milli < 1000:
		return j, fmt.Errorf("pod %s: a GPU share below 1000 needs exactly one GPU, not %d", p.Name, p.GPUs)
	}
	for _, m := range p.Models {
		id, ok := c.ModelByName(m)
		if !ok {
			return j, fmt.Errorf("pod %s: GPU model %q is not in the cluster (it has %v)", p.Name, m, c.Models)
		}
		j.Models = j.Models.With(id)
	}
	if p.GPUs == 0 {
		j.Models = 0 // FGD ignores a CPU pod's model constraint
	}
	j.Req = request.Request{
		JobID: p.Name, GPUs: p.GPUs, Nodes: 1, CPUMilli: p.CPUMilli, MemMiB: p.MemMiB,
		Models: p.Models, Tier: topology.TierNode, Mode: request.Required,
	}
	if p.Milli < 1000 {
		j.Req.Milli = p.Milli
	}
	return j, nil
}

// fgdShape is the pod type FGD counts: (CPU, share, GPUs, gpu_spec text).
// Kubernetes reads a zero CPU request as 100 milli-CPUs when scoring
// (GetNonzeroRequests), and FGD takes pod types from there.
func fgdShape(j *Job) frag.NodeShape {
	cpu := j.CPUMilli
	if cpu == 0 {
		cpu = 100
	}
	s := frag.NodeShape{GPUs: j.GPUs, Milli: j.Milli, CPUMilli: cpu, Models: j.Models}
	if j.GPUs > 0 {
		s.Spec = j.Pod.Spec
	}
	return s
}
