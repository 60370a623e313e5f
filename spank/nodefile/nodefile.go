package nodefile

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Header is the first line of the node files this package writes (v2:
// domains carry their members). HeaderV1 files, without members lines,
// are still read.
const (
	Header   = "gangtopo-node v2"
	HeaderV1 = "gangtopo-node v1"
)

// MaxBytes bounds a node file, as the C reader does (GT_NODEFILE_MAX).
const MaxBytes = 64 << 10

// MaxLine bounds a line, as the C reader does (its line buffer is 512
// bytes); members lines are cut to fit.
const MaxLine = 511

// membersPerLine bounds the hostlist of one members line, leaving room for
// the keyword.
const membersPerLine = MaxLine - len("members ")

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
type Domain struct {
	Tier, Name string
	// Members lists the domain's nodes as a Slurm hostlist expression
	// ("node[01-04]"): with it, slurmstepd on this node tells the tightest
	// domain holding every node of a step from this node's file alone,
	// without reading other nodes' files (which a node-local directory
	// does not have). "" for a v1 file.
	Members string
}

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
// (the cluster), each where the node has one, with its members.
func domains(c *topology.Cluster, n topology.NodeID) []Domain {
	var ds []Domain
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
		if d := c.Nodes[n].Up[t]; d != topology.NoDomain {
			dom := &c.Domains[d]
			names := make([]string, 0, dom.NumNodes())
			for id := dom.NodeLo; id < dom.NodeHi; id++ {
				names = append(names, c.Nodes[id].Name)
			}
			ds = append(ds, Domain{t.String(), dom.Name, hostlist.Compress(names)})
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
		for _, m := range memberLines(d.Members) {
			fmt.Fprintf(&b, "members %s\n", m)
		}
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

// memberLines splits a hostlist into expressions of at most membersPerLine
// bytes whose union is the same set: its top-level items (brackets never
// span two), packed greedily; an item longer than a line on its own is
// expanded and its names split in halves until they fit (a cluster's
// names are regular enough that one line is the rule).
func memberLines(members string) []string {
	var out []string
	cur := ""
	for _, item := range topItems(members) {
		pieces := []string{item}
		if len(item) > membersPerLine {
			if names, err := hostlist.Expand(item); err == nil && len(names) > 1 {
				pieces = splitNames(names)
			}
		}
		for _, p := range pieces {
			switch {
			case cur == "":
				cur = p
			case len(cur)+1+len(p) <= membersPerLine:
				cur += "," + p
			default:
				out, cur = append(out, cur), p
			}
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// topItems cuts a host list at the commas outside brackets.
func topItems(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				if i > start {
					out = append(out, s[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func splitNames(names []string) []string {
	if s := hostlist.Compress(names); len(s) <= membersPerLine || len(names) == 1 {
		return []string{s}
	}
	half := len(names) / 2
	return append(splitNames(names[:half]), splitNames(names[half:])...)
}

// bracketsBalanced: every '[' closed by a ']' before the next '[' (a host
// list has no nested brackets), so a list split into lines at top-level
// commas never has a bracket open across lines.
func bracketsBalanced(s string) bool {
	open := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '[' && !open:
			open = true
		case s[i] == ']' && open:
			open = false
		case s[i] == '[' || s[i] == ']':
			return false
		}
	}
	return !open
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
	if len(data) > MaxBytes {
		return f, fmt.Errorf("larger than %d bytes", MaxBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line, version, prev := 0, 0, ""
	for sc.Scan() {
		line++
		if len(sc.Text()) > MaxLine {
			return f, fmt.Errorf("line %d: longer than %d bytes", line, MaxLine)
		}
		text, _, _ := strings.Cut(sc.Text(), "#")
		w := strings.Fields(text)
		if len(w) == 0 {
			continue
		}
		if version == 0 {
			switch strings.Join(w, " ") {
			case Header:
				version = 2
			case HeaderV1:
				version = 1
			default:
				return f, fmt.Errorf("line %d: want %q (or %q) first", line, Header, HeaderV1)
			}
			continue
		}
		if err := f.parseLine(w, version, prev); err != nil {
			return f, fmt.Errorf("line %d: %w", line, err)
		}
		prev = w[0]
	}
	if version == 0 || f.Node == "" {
		return f, fmt.Errorf("no %q header or no node line", Header)
	}
	if err := sc.Err(); err != nil {
		return f, err
	}
	return f, f.Check()
}

// parseLine reads one line; prev is the keyword of the line before.
func (f *File) parseLine(w []string, version int, prev string) error {
	switch {
	case w[0] == "node" && len(w) == 2:
		f.Node = w[1]
	case w[0] == "domain" && len(w) == 3:
		f.Domains = append(f.Domains, Domain{Tier: w[1], Name: w[2]})
	case w[0] == "members" && len(w) == 2 && version >= 2:
		if prev != "domain" && prev != "members" {
			return fmt.Errorf("members line not right after a domain line")
		}
		if !bracketsBalanced(w[1]) {
			return fmt.Errorf("members %q: unbalanced brackets", w[1])
		}
		d := &f.Domains[len(f.Domains)-1]
		if d.Members != "" {
			d.Members += ","
		}
		d.Members += w[1]
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

// The C reader's limits (gangtopo_nodefile.h).
const (
	maxName    = 63 // GT_NAME_MAX - 1
	maxTier    = 15
	maxDomains = 8
	maxIslands = 64
	maxNICs    = 32
)

// Check applies the C reader's rules on names and counts: what it would
// refuse, a writer must not write. Names become environment values and
// file names inside slurmstepd, and NIC names become NCCL_IB_HCA, whose
// syntax gives ',' ':' '^' and '=' meanings: each name is letters, digits
// and . _ - only (domain and island names may also hold + and /), a node
// name does not start with '.', and a tier is lower-case letters.
func (f File) Check() error {
	if !validName(f.Node, "") || f.Node[0] == '.' {
		return fmt.Errorf("node name %q: want letters, digits, . _ - (at most %d, not starting with .)", f.Node, maxName)
	}
	if len(f.Domains) > maxDomains || len(f.NVLink) > maxIslands || len(f.NICs) > maxNICs {
		return fmt.Errorf("more than %d domains, %d NVLink islands or %d NICs", maxDomains, maxIslands, maxNICs)
	}
	for _, d := range f.Domains {
		if d.Tier == "" || len(d.Tier) > maxTier || strings.Trim(d.Tier, "abcdefghijklmnopqrstuvwxyz") != "" {
			return fmt.Errorf("domain tier %q: want lower-case letters", d.Tier)
		}
		if !validName(d.Name, "+/") {
			return fmt.Errorf("domain name %q: want letters, digits, . _ + / - (at most %d)", d.Name, maxName)
		}
		if strings.Trim(d.Members, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-[],") != "" {
			return fmt.Errorf("members of %s %q: want a host list (letters, digits, . _ - [ ] ,)", d.Tier, d.Members)
		}
	}
	for _, s := range f.NVLink {
		if !validName(s.Name, "+/") {
			return fmt.Errorf("NVLink island name %q: want letters, digits, . _ + / - (at most %d)", s.Name, maxName)
		}
	}
	for _, s := range f.NICs {
		if !validName(s.Name, "") {
			return fmt.Errorf("NIC name %q: want letters, digits, . _ - (at most %d): it goes into NCCL_IB_HCA", s.Name, maxName)
		}
	}
	return nil
}

// validName: 1..maxName bytes of letters, digits, . _ - and extra.
func validName(s, extra string) bool {
	if s == "" || len(s) > maxName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' ||
			strings.IndexByte(extra, c) >= 0
		if !ok {
			return false
		}
	}
	return true
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
