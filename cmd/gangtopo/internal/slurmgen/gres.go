package slurmgen

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// GresOptions tunes GresConf.
type GresOptions struct {
	// DevDir holds the nvidia<N> device files (default /dev).
	DevDir string
	// ThreadsPerCore turns a node's CPU count into cores for Cores=; 0
	// takes each node's threads_per_core from the cluster file (which
	// `topology build` copies from the node map; 1 when absent).
	ThreadsPerCore int
	// NUMANodes is the NUMA node count per node for Cores=; 0 infers it as
	// one more than the highest NUMA id of the node's GPUs and NICs.
	NUMANodes int
	// NoAutoDetectLine leaves out the AutoDetect=off line, for appending to
	// a gres.conf that already has its global settings.
	NoAutoDetectLine bool
}

// GresConf writes gres.conf: for every group of nodes with the same GPUs,
// one line per GPU with its GRES type (the model), device file, NVLink
// counts and cores.
//
// Links= lists, for GPU i, the NVLinks to each GPU of the node in index
// order, -1 for itself; it comes from the cluster file, which counts links
// through NVSwitch too (Slurm's NVML autodetection matches NVLink peers by
// PCI id and so reports zero links on NVSwitch systems). AutoDetect=off
// keeps Slurm from replacing these lines with its own detection.
//
// Cores= is the range of Slurm core indices of the GPU's NUMA node, found
// by dividing the node's cores evenly over its NUMA nodes in id order: the
// usual layout (NUMA nodes split sockets into contiguous core ranges, and
// Slurm numbers cores socket by socket). Nodes where that division is not
// exact get no Cores= and a warning; so do GPUs whose NUMA node is unknown.
func GresConf(w io.Writer, c *topology.Cluster, o GresOptions) ([]string, error) {
	if o.DevDir == "" {
		o.DevDir = "/dev"
	}
	var warns []string
	lines := map[string][]string{} // group key -> per-GPU parts
	groups := groupNodes(c, func(n *topology.Node) string {
		parts, ws := gpuLines(c, n, o)
		key := strings.Join(parts, "\n")
		if _, seen := lines[key]; !seen {
			warns = append(warns, ws...)
		}
		lines[key] = parts
		return key
	})
	var b strings.Builder
	b.WriteString(header(c, "gres.conf"))
	b.WriteString("# Links= counts NVLinks (through NVSwitch too) to each GPU in index order, -1 = itself.\n")
	if !o.NoAutoDetectLine {
		b.WriteString("AutoDetect=off\n")
	}
	for _, g := range groups {
		for _, part := range lines[g.key] {
			fmt.Fprintf(&b, "NodeName=%s %s\n", hosts(g.nodes), part)
		}
	}
	_, err := io.WriteString(w, b.String())
	return warns, err
}

// gpuLines is the part after NodeName= for each GPU of n.
func gpuLines(c *topology.Cluster, n *topology.Node, o GresOptions) ([]string, []string) {
	k := n.NumGPUs()
	cores, warns := coreRanges(c, n, o)
	hasLinks := false
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			hasLinks = hasLinks || n.Links(i, j) > 0
		}
	}
	var out []string
	for i := 0; i < k; i++ {
		g := &c.GPUs[n.GPU(i)]
		s := fmt.Sprintf("Name=gpu Type=%s File=%s", c.ModelName(g.Model), path.Join(o.DevDir, "nvidia"+strconv.Itoa(g.Index)))
		if hasLinks {
			links := make([]string, k)
			for j := range links {
				links[j] = strconv.Itoa(n.Links(i, j))
			}
			links[i] = "-1"
			s += " Links=" + strings.Join(links, ",")
		}
		if r, ok := cores[g.NUMA]; ok {
			s += " Cores=" + r
		} else if g.NUMA < 0 {
			warns = append(warns, fmt.Sprintf("node %s GPU %d: NUMA node unknown, no Cores=", n.Name, i))
		}
		out = append(out, s)
	}
	return out, warns
}

// coreRanges maps each NUMA node of n to its Slurm core index range.
func coreRanges(c *topology.Cluster, n *topology.Node, o GresOptions) (map[int]string, []string) {
	numa := o.NUMANodes
	if numa <= 0 {
		for i := 0; i < n.NumGPUs(); i++ {
			numa = max(numa, c.GPUs[n.GPU(i)].NUMA+1)
		}
		for _, nic := range n.NICs {
			numa = max(numa, nic.NUMA+1)
		}
	}
	threads := max(n.ThreadsPerCore, 1)
	if o.ThreadsPerCore > 0 {
		threads = o.ThreadsPerCore
	}
	cores := n.CPUs / threads
	if numa <= 0 || cores == 0 {
		return nil, nil
	}
	if n.CPUs%threads != 0 || cores%numa != 0 {
		return nil, []string{fmt.Sprintf("node %s: %d CPUs (%d threads per core) do not split evenly over %d NUMA nodes; no Cores=", n.Name, n.CPUs, threads, numa)}
	}
	per := cores / numa
	out := map[int]string{}
	for i := 0; i < numa; i++ {
		out[i] = fmt.Sprintf("%d-%d", i*per, (i+1)*per-1)
	}
	return out, nil
}
