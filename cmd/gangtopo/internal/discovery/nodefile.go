package discovery

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// NodeFileHeader is the first line of a node file (format v1).
const NodeFileHeader = "gangtopo-node v1"

// MaxNodeFileGPUs bounds GPU indices in a node file: the C reader keeps a
// node's GPUs in a 64-bit mask.
const MaxNodeFileGPUs = 64

// NodeFile is the per-node file the SPANK plugin's remote context (in
// slurmstepd) reads to set NCCL_IB_HCA and the GANGTOPO_* variables. Its
// format is the SPANK plugin's (c/gangtopo_nodefile.h, spank/nodefile):
//
//	gangtopo-node v1
//	node dgx001
//	domain leaf leaf1        tightest first: block, leaf, spine, any
//	domain spine spine1
//	domain any lab
//	nvlink dgx001/nvl0 0-7   an NVLink island and its GPUs
//	nic mlx5_0 0             an RDMA NIC and the GPUs it serves
//
// The node daemon writes it from live discovery: nvlink lines are the
// connected components of the NVLink matrix (named <node>/nvl<i> in order
// of their lowest GPU, as the topology package names islands); nic lines
// list the usable NICs only (a physical function with an active port), each
// with the GPUs for which it is among the nearest usable NICs, so a GPU
// whose own HCA is down is pointed at the next nearest and NCCL never at a
// dead port. Domain lines come from the cluster file when the daemon has
// one; without it the file has none, and the plugin sets no GANGTOPO_TIER.
type NodeFile struct {
	Node    string
	Domains []NodeFileDomain // tightest first
	NVLink  []GPUSet
	NICs    []GPUSet
}

// NodeFileDomain is one domain above the node: tier block, leaf, spine or
// any (the cluster).
type NodeFileDomain struct{ Tier, Name string }

// GPUSet is a named set of local GPU indices.
type GPUSet struct {
	Name string
	GPUs []int
}

// BuildNodeFile derives the node file of a node map; domains come from
// the cluster file (nil without one).
func BuildNodeFile(m *NodeMap, domains []NodeFileDomain) NodeFile {
	f := NodeFile{Node: m.Node, Domains: domains}
	for i, isl := range nvlinkIslands(m.NVLink.Links) {
		var gpus []int
		for _, p := range isl {
			gpus = append(gpus, m.GPUs[p].Index)
		}
		f.NVLink = append(f.NVLink, GPUSet{Name: fmt.Sprintf("%s/nvl%d", m.Node, i), GPUs: gpus})
	}
	serves := make([][]int, len(m.NICs))
	for i, g := range m.GPUs {
		for _, n := range nearest(m.NICPCIe[i], m.NICs, (*NIC).Usable) {
			serves[n] = append(serves[n], g.Index)
		}
	}
	for n := range m.NICs {
		if m.NICs[n].Usable() {
			f.NICs = append(f.NICs, GPUSet{Name: m.NICs[n].Name, GPUs: serves[n]})
		}
	}
	return f
}

// ClusterDomains lists the domains above a node in the cluster file,
// tightest first (block, leaf, spine, any), for the node file's domain
// lines; ok is false when the cluster has no such node.
func ClusterDomains(c *topology.Cluster, node string) (ds []NodeFileDomain, ok bool) {
	id, ok := c.NodeByName(node)
	if !ok {
		return nil, false
	}
	n := &c.Nodes[id]
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
		if d := n.Up[t]; d != topology.NoDomain {
			ds = append(ds, NodeFileDomain{Tier: t.String(), Name: c.Domains[d].Name})
		}
	}
	return ds, true
}

// nvlinkIslands is the connected components of a link matrix by local
// position, each sorted, ordered by their lowest GPU; a GPU without NVLink
// is an island of its own.
func nvlinkIslands(links [][]int) [][]int {
	uf := newUnionFind(len(links))
	for i := range links {
		for j := range links[i] {
			if i != j && links[i][j] > 0 {
				uf.union(i, j)
			}
		}
	}
	at := map[int]int{}
	var out [][]int
	for i := range links {
		r := uf.find(i)
		k, ok := at[r]
		if !ok {
			k = len(out)
			at[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}

// Render writes the file's text.
func (f NodeFile) Render() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gangtopo node file, written by gangtopo daemon --role node; read by spank_gangtopo.so\n%s\nnode %s\n", NodeFileHeader, f.Node)
	for _, d := range f.Domains {
		fmt.Fprintf(&b, "domain %s %s\n", d.Tier, d.Name)
	}
	for _, s := range f.NVLink {
		fmt.Fprintf(&b, "nvlink %s %s\n", s.Name, formatGPUs(s.GPUs))
	}
	for _, s := range f.NICs {
		fmt.Fprintf(&b, "nic %s", s.Name)
		if len(s.GPUs) > 0 {
			fmt.Fprintf(&b, " %s", formatGPUs(s.GPUs))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// formatGPUs writes indices as ranges: [0 1 2 3 6] -> "0-3,6".
func formatGPUs(gpus []int) string {
	gs := append([]int(nil), gpus...)
	sort.Ints(gs)
	var parts []string
	for i := 0; i < len(gs); {
		j := i
		for j+1 < len(gs) && gs[j+1] == gs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", gs[i], gs[j]))
		} else {
			parts = append(parts, strconv.Itoa(gs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// parseGPUList reads "0-3,6" with every index below MaxNodeFileGPUs.
func parseGPUList(s string) ([]int, error) {
	gpus, err := ParseCPUList(s)
	for _, g := range gpus {
		if g >= MaxNodeFileGPUs {
			err = fmt.Errorf("index %d", g)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bad GPU list %q (want indices 0..%d such as 0-3,6)", s, MaxNodeFileGPUs-1)
	}
	return gpus, nil
}

// ParseNodeFile reads a node file with the C parser's rules (the reader in
// the SPANK plugin is the reference); errors name the line.
func ParseNodeFile(data []byte) (NodeFile, error) {
	var f NodeFile
	sc := bufio.NewScanner(bytes.NewReader(data))
	header := false
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		w := strings.Fields(text)
		if len(w) == 0 {
			continue
		}
		if !header {
			if strings.Join(w, " ") != NodeFileHeader {
				return f, fmt.Errorf("line %d: want %q first", line, NodeFileHeader)
			}
			header = true
			continue
		}
		if err := f.parseLine(w); err != nil {
			return f, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if !header || f.Node == "" {
		return f, fmt.Errorf("no %q header or no node line", NodeFileHeader)
	}
	return f, sc.Err()
}

func (f *NodeFile) parseLine(w []string) error {
	switch {
	case w[0] == "node" && len(w) == 2:
		f.Node = w[1]
	case w[0] == "domain" && len(w) == 3:
		f.Domains = append(f.Domains, NodeFileDomain{w[1], w[2]})
	case (w[0] == "nvlink" && len(w) == 3) || (w[0] == "nic" && (len(w) == 2 || len(w) == 3)):
		s := GPUSet{Name: w[1]}
		if len(w) == 3 {
			gpus, err := parseGPUList(w[2])
			if err != nil {
				return err
			}
			s.GPUs = gpus
		}
		if w[0] == "nic" {
			f.NICs = append(f.NICs, s)
		} else {
			f.NVLink = append(f.NVLink, s)
		}
	default:
		return fmt.Errorf("bad %q line", w[0])
	}
	return nil
}
