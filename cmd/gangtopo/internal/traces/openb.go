package traces

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/selector/sim/fgd"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Node is one row of an openb node list: the simulator's node and where
// the trace gave it.
type Node struct {
	fgd.Node
	At string // file:line
}

// Pod is one row of an openb pod list: the simulator's pod (times and QoS
// are not read: the FGD protocol does not use them) and where the trace
// gave it. Milli is 1..1000 for a GPU pod (below 1000 only for single-GPU
// pods), 0 for a CPU-only pod; Models keeps the trace's order and
// spelling, and Spec the list as the trace wrote it (empty entries
// dropped), which the FGD simulator uses as part of a pod's type.
type Pod struct {
	fgd.Pod
	At string // file:line
}

// Limits on what a row may hold; generous, so only nonsense is rejected.
const (
	maxGPUsPerNode = 64
	maxMilliCPU    = 1 << 40
	maxMemMiB      = 1 << 40
)

// ReadNodes reads an openb node list (columns sn, cpu_milli, memory_mib,
// gpu, model; others are ignored).
func ReadNodes(path string) ([]Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNodes(path, f)
}

func readNodes(path string, rd io.Reader) ([]Node, error) {
	t, err := newTable(path, rd)
	if err != nil {
		return nil, err
	}
	if err := t.require("sn", "cpu_milli", "memory_mib", "gpu", "model"); err != nil {
		return nil, err
	}
	var nodes []Node
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil || !ok {
			if err == nil && len(nodes) == 0 {
				err = fmt.Errorf("%s: no nodes", path)
			}
			return nodes, err
		}
		n, err := t.node()
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[n.Name]; dup {
			return nil, t.errorf("sn", "node %q is listed twice (first on line %d)", n.Name, prev)
		}
		seen[n.Name] = t.line
		nodes = append(nodes, n)
	}
}

func (t *table) node() (Node, error) {
	n := Node{Node: fgd.Node{Name: t.str("sn"), Model: t.str("model")}, At: fmt.Sprintf("%s:%d", t.name, t.line)}
	if n.Name == "" {
		return n, t.errorf("sn", "empty node name")
	}
	var err error
	if n.CPUMilli, err = t.int("cpu_milli", 0, maxMilliCPU); err != nil {
		return n, err
	}
	if n.MemMiB, err = t.int("memory_mib", 0, maxMemMiB); err != nil {
		return n, err
	}
	gpus, err := t.int("gpu", 0, maxGPUsPerNode)
	if err != nil {
		return n, err
	}
	n.GPUs = int(gpus)
	if n.GPUs > 0 && n.Model == "" {
		return n, t.errorf("model", "node %s has %d GPUs but no model", n.Name, n.GPUs)
	}
	return n, nil
}

// Models returns the distinct GPU models of nodes, sorted.
func Models(nodes []Node) []string {
	set := map[string]bool{}
	for _, n := range nodes {
		if n.Model != "" {
			set[n.Model] = true
		}
	}
	out := make([]string, 0, len(set))
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// ReadPods reads an openb pod list (columns name, cpu_milli, memory_mib,
// num_gpu, gpu_milli and, except in the multigpu lists, gpu_spec). Every
// model named in gpu_spec must be one of models (compared ignoring case):
// a pod asking for a model no node has is a data error, not a pod that
// merely fails.
func ReadPods(path string, models []string) ([]Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readPods(path, f, models)
}

func readPods(path string, rd io.Reader, models []string) ([]Pod, error) {
	t, err := newTable(path, rd)
	if err != nil {
		return nil, err
	}
	if err := t.require("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, m := range models {
		known[topology.CanonicalModel(m)] = true
	}
	var pods []Pod
	seen := map[string]int{}
	for {
		ok, err := t.next()
		if err != nil || !ok {
			if err == nil && len(pods) == 0 {
				err = fmt.Errorf("%s: no pods", path)
			}
			return pods, err
		}
		p, err := t.pod(known, models)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[p.Name]; dup {
			return nil, t.errorf("name", "pod %q is listed twice (first on line %d)", p.Name, prev)
		}
		seen[p.Name] = t.line
		pods = append(pods, p)
	}
}

func (t *table) pod(known map[string]bool, models []string) (Pod, error) {
	p := Pod{Pod: fgd.Pod{Name: t.str("name")}, At: fmt.Sprintf("%s:%d", t.name, t.line)}
	if p.Name == "" {
		return p, t.errorf("name", "empty pod name")
	}
	var err error
	if p.CPUMilli, err = t.int("cpu_milli", 0, maxMilliCPU); err != nil {
		return p, err
	}
	if p.MemMiB, err = t.int("memory_mib", 0, maxMemMiB); err != nil {
		return p, err
	}
	gpus, err := t.int("num_gpu", 0, maxGPUsPerNode)
	if err != nil {
		return p, err
	}
	milli, err := t.int("gpu_milli", 0, 1000)
	if err != nil {
		return p, err
	}
	p.GPUs, p.Milli = int(gpus), int(milli)
	switch {
	case p.GPUs == 0 && p.Milli != 0:
		return p, t.errorf("gpu_milli", "%d milli-GPUs for a pod with num_gpu 0 (want 0)", p.Milli)
	case p.GPUs > 0 && p.Milli == 0:
		return p, t.errorf("gpu_milli", "0 for a pod with %d GPUs (want 1..1000)", p.GPUs)
	case p.GPUs > 1 && p.Milli < 1000:
		return p, t.errorf("gpu_milli", "a share of %d milli-GPUs needs num_gpu 1, not %d", p.Milli, p.GPUs)
	case p.GPUs == 0 && p.CPUMilli == 0:
		return p, t.errorf("cpu_milli", "a pod without GPUs must ask for CPUs")
	}
	if t.has("gpu_spec") {
		if err := t.spec(&p, known, models); err != nil {
			return p, err
		}
	}
	return p, nil
}

// spec parses gpu_spec: models joined by '|', empty entries ignored (as the
// FGD simulator's pod_csv_to_yaml.py does).
func (t *table) spec(p *Pod, known map[string]bool, models []string) error {
	raw := t.str("gpu_spec")
	if raw == "" {
		return nil
	}
	if p.GPUs == 0 {
		return t.errorf("gpu_spec", "%q on a pod without GPUs", raw)
	}
	for _, m := range strings.Split(raw, "|") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !known[topology.CanonicalModel(m)] {
			return t.errorf("gpu_spec", "unknown GPU model %q (the node list has %s)", m, strings.Join(models, ", "))
		}
		p.Models = append(p.Models, m)
	}
	p.Spec = strings.Join(p.Models, "|")
	return nil
}
