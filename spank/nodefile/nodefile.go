package nodefile

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Header is the first line of a v1 node file.
const Header = "gangtopo-node v1"

// MaxGPUs bounds GPU indices in a node file: the C reader keeps a node's
// GPUs in a 64-bit mask.
const MaxGPUs = 64

// comment is the comment line Render writes above the header.
const comment = "gangtopo node file: read by spank_gangtopo.so in slurmstepd (docs/admin.md)"

// File is one node's file.
type File struct {
	Node    string
	Domains []Domain // tightest first
	NVLink  []Set
	NICs    []Set
}

// Domain is one domain above the node.
type Domain struct{ Tier, Name string }

// Set is a named set of local GPU indices (an NVLink island or a NIC's
// nearest GPUs).
type Set struct {
	Name string
	GPUs []int
}

// FromCluster builds node n's file.
func FromCluster(c *topology.Cluster, n topology.NodeID) File {
	node := &c.Nodes[n]
	f := File{Node: node.Name, Domains: domains(c, n)}
	for _, id := range node.Islands {
		var gpus []int
		for _, g := range c.Domains[id].IslandGPUs {
			gpus = append(gpus, c.GPUs[g].Index)
		}
		f.NVLink = append(f.NVLink, Set{c.Domains[id].Name, gpus})
	}
	for _, nic := range node.NICs {
		f.NICs = append(f.NICs, Set{nic.Name, append([]int(nil), nic.GPUs...)})
	}
	return f
}

// DomainsOf lists the domains above the named node in c, tightest first,
// as FromCluster does; ok is false when c has no such node. The node
// daemon takes its file's domain lines from here.
func DomainsOf(c *topology.Cluster, node string) (ds []Domain, ok bool) {
	id, ok := c.NodeByName(node)
	if !ok {
		return nil, false
	}
	return domains(c, id), true
}

// domains lists the domains above node n: block, leaf, spine, then any
// (the cluster), each where the node has one.
func domains(c *topology.Cluster, n topology.NodeID) []Domain {
	var ds []Domain
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
		if d := c.Nodes[n].Up[t]; d != topology.NoDomain {
			ds = append(ds, Domain{t.String(), c.Domains[d].Name})
		}
	}
	return ds
}

// Render writes the file's text under a comment naming its reader.
func (f File) Render() []byte { return f.RenderWithComment(comment) }

// RenderWithComment writes the file's text under the comment line
// "# "+text (one line): a writer may name itself there, as the node daemon
// does. GPU lists are written in the order given.
func (f File) RenderWithComment(text string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n%s\nnode %s\n", text, Header, f.Node)
	for _, d := range f.Domains {
		fmt.Fprintf(&b, "domain %s %s\n", d.Tier, d.Name)
	}
	for _, s := range f.NVLink {
		fmt.Fprintf(&b, "nvlink %s %s\n", s.Name, FormatGPUs(s.GPUs))
	}
	for _, s := range f.NICs {
		fmt.Fprintf(&b, "nic %s", s.Name)
		if len(s.GPUs) > 0 {
			fmt.Fprintf(&b, " %s", FormatGPUs(s.GPUs))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// FormatGPUs writes indices as ranges: [0 1 2 3 6] -> "0-3,6".
func FormatGPUs(gpus []int) string {
	var parts []string
	for i := 0; i < len(gpus); {
		j := i
		for j+1 < len(gpus) && gpus[j+1] == gpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", gpus[i], gpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(gpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Parse reads a node file with the C parser's rules; errors name the line.
func Parse(data []byte) (File, error) {
	var f File
	sc := bufio.NewScanner(bytes.NewReader(data))
	line, header := 0, false
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		w := strings.Fields(text)
		if len(w) == 0 {
			continue
		}
		if !header {
			if strings.Join(w, " ") != Header {
				return f, fmt.Errorf("line %d: want %q first", line, Header)
			}
			header = true
			continue
		}
		if err := f.parseLine(w); err != nil {
			return f, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if !header || f.Node == "" {
		return f, fmt.Errorf("no %q header or no node line", Header)
	}
	return f, sc.Err()
}

func (f *File) parseLine(w []string) error {
	switch {
	case w[0] == "node" && len(w) == 2:
		f.Node = w[1]
	case w[0] == "domain" && len(w) == 3:
		f.Domains = append(f.Domains, Domain{w[1], w[2]})
	case w[0] == "nvlink" && len(w) == 3, w[0] == "nic" && (len(w) == 2 || len(w) == 3):
		var gpus []int
		if len(w) == 3 {
			var err error
			if gpus, err = parseGPUs(w[2]); err != nil {
				return err
			}
		}
		s := Set{w[1], gpus}
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

// parseGPUs reads a GPU list as the C reader (gt_gpu_mask) does: indices
// and ranges joined by commas, one trailing comma allowed, no empty item
// (the C reader refuses "," and "0,,1", so Parse must too).
func parseGPUs(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(strings.TrimSuffix(s, ","), ",") {
		lo, hi, isRange := strings.Cut(p, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= MaxGPUs {
			return nil, fmt.Errorf("bad GPU list %q (want indices 0..%d such as 0-3,6)", s, MaxGPUs-1)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
