package nodefile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/tests/tools/ctest"
)

func TestRenderLab16(t *testing.T) {
	c := topotest.Lab16()
	id, _ := c.NodeByName("node05")
	got := string(FromCluster(c, id).Render())
	want := `# gangtopo node file: read by spank_gangtopo.so in slurmstepd (docs/admin.md)
gangtopo-node v2
node node05
domain leaf leaf2
members node[05-08]
domain spine spine1
members node[01-08]
domain any lab16
members node[01-16]
nvlink node05/nvl0 0-7
`
	// Lab16 from topotest has no NICs; docs/examples/lab16.yaml has four
	if !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant it to start with\n%s", got, want)
	}
}

func TestParseRoundTrip(t *testing.T) {
	f := File{Node: "gpu7", Domains: []Domain{{"block", "rack3", "gpu[1-7]"}, {"leaf", "l1", "gpu[1-32],x"}, {"any", "big", ""}},
		NVLink: []Set{{"gpu7/nvl0", []int{0, 1}}, {"gpu7/nvl1", []int{2, 3}}},
		NICs:   []Set{{"mlx5_0", []int{0, 1}}, {"mlx5_1", nil}}}
	back, err := Parse(f.Render())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, back); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The node daemon's file for a node of a cluster file names the same
// domains as FromCluster's.
func TestDomainsOf(t *testing.T) {
	c := lab16(t)
	for i := range c.Nodes {
		got, ok := DomainsOf(c, c.Nodes[i].Name)
		if !ok {
			t.Fatalf("DomainsOf(%s): no such node", c.Nodes[i].Name)
		}
		if diff := cmp.Diff(FromCluster(c, topology.NodeID(i)).Domains, got); diff != "" {
			t.Errorf("%s (-FromCluster +DomainsOf):\n%s", c.Nodes[i].Name, diff)
		}
	}
	want := []Domain{{"leaf", "leaf2", "node[05-08]"}, {"spine", "spine1", "node[01-08]"}, {"any", "lab16", "node[01-16]"}}
	if got, _ := DomainsOf(c, "node05"); !cmp.Equal(want, got) {
		t.Errorf("DomainsOf(node05) (-want +got):\n%s", cmp.Diff(want, got))
	}
	if ds, ok := DomainsOf(c, "node99"); ok || ds != nil {
		t.Errorf("DomainsOf(node99) = %v, %v; want nil, false", ds, ok)
	}
}

// A writer's comment replaces the first line only.
func TestRenderWithComment(t *testing.T) {
	f := File{Node: "n1", NVLink: []Set{{"n1/nvl0", []int{0, 1, 2, 3}}}, NICs: []Set{{"mlx5_0", []int{3, 0}}}}
	want := "# written by a test\ngangtopo-node v2\nnode n1\nnvlink n1/nvl0 0-3\nnic mlx5_0 3,0\n"
	if diff := cmp.Diff(want, string(f.RenderWithComment("written by a test"))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, body, _ := strings.Cut(string(f.Render()), "\n")
	if _, wantBody, _ := strings.Cut(want, "\n"); body != wantBody {
		t.Errorf("Render's body\n%s\ndiffers from RenderWithComment's\n%s", body, wantBody)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "no \"gangtopo-node v2\" header",
		"gangtopo-node v3\nnode a\n":            "line 1: want",
		"node a\n":                              `line 1: want "gangtopo-node v2" (or "gangtopo-node v1") first`,
		"gangtopo-node v1\n":                    "no node line",
		"gangtopo-node v1\nnode a\nnic x 9-2":   "line 3: bad GPU list",
		"gangtopo-node v1\nnode a\ncolour x":    `line 3: bad "colour" line`,
		"gangtopo-node v1\nnode a\nswitch s1\n": `line 3: bad "switch" line`,
		// indices must fit the C reader's 64-bit mask
		"gangtopo-node v1\nnode a\nnic mlx5_0 0-99999999\n": "line 3: bad GPU list",
		"gangtopo-node v1\nnode a\nnic mlx5_0 64\n":         `line 3: bad GPU list "64" (want indices 0..63 such as 0-3,6)`,
		// the C reader refuses empty items (the fuzzer found "," parsed
		// here and rendered as a line nobody could read)
		"gangtopo-node v1\nnode 0\nnvlink 0 ,": `line 3: bad GPU list ","`,
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}

// What the C reader refuses (names that are not plain file names, NIC
// names NCCL_IB_HCA would misread, members out of place), Parse refuses
// too, so that a writer checking with it never writes a file slurmstepd
// drops.
func TestRefusedAsC(t *testing.T) {
	bin := ctest.Build(t)
	dir := t.TempDir()
	for _, in := range []string{
		"gangtopo-node v2\nnode a\nnic mlx5_0,mlx5_1 0\n",
		"gangtopo-node v2\nnode a\nnic ^mlx5_0 0\n",
		"gangtopo-node v2\nnode a\nnic mlx5_0:1 0\n",
		"gangtopo-node v2\nnode a\nnic =mlx5_0 0\n",
		"gangtopo-node v2\nnode a\nnic mlx5\x1b 0\n",
		"gangtopo-node v2\nnode ../a\n",
		"gangtopo-node v2\nnode .a\n",
		"gangtopo-node v2\nnode a\ndomain Leaf l1\n",
		"gangtopo-node v2\nnode a\ndomain leaf l$1\n",
		"gangtopo-node v2\nnode a\ndomain leaf l1\nnic m 0\nmembers a\n",
		"gangtopo-node v2\nnode a\nmembers a\n",
		"gangtopo-node v1\nnode a\ndomain leaf l1\nmembers a\n",
		"gangtopo-node v2\nnode a\ndomain leaf l1\nmembers a;b\n",
		"gangtopo-node v2\nnode a\ndomain leaf l1\nmembers a[1\nmembers 2]\n",
		"gangtopo-node v2\nnode a\ndomain leaf l1\nmembers a[1[2]]\n",
		"gangtopo-node v2\nnode " + strings.Repeat("n", 64) + "\n",
		"gangtopo-node v2\nnode a\n# " + strings.Repeat("x", 600) + "\n",
	} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("Parse(%q) accepted it", in)
		}
		path := filepath.Join(dir, "a")
		if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--nodefile", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(out), "err ") {
			t.Errorf("C reads %q: %q, want a refusal", in, out)
		}
	}
}

// A domain whose member list does not fit one line is split over several
// members lines, each within the C reader's line, together the same nodes.
func TestMembersSplit(t *testing.T) {
	var names []string
	for i := 0; i < 3000; i += 3 { // every third number: no ranges
		names = append(names, fmt.Sprintf("gpu-node-%05d", i))
	}
	all := hostlist.Compress(names)
	f := File{Node: names[0], Domains: []Domain{{"any", "big", all}}}
	text := f.Render()
	lines := strings.Count(string(text), "\nmembers ")
	if lines < 2 {
		t.Fatalf("%d members lines for %d bytes of names", lines, len(all))
	}
	for _, l := range strings.Split(string(text), "\n") {
		if len(l) > MaxLine {
			t.Errorf("line of %d bytes: %.40s...", len(l), l)
		}
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hostlist.Expand(back.Domains[0].Members)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if diff := cmp.Diff(names, got); diff != "" {
		t.Errorf("members after the split (-want +got):\n%s", diff)
	}
}

func TestFormatGPUs(t *testing.T) {
	for in, want := range map[string]string{"0 1 2 3 6": "0-3,6", "5": "5", "": "", "0 2 4": "0,2,4"} {
		var gpus []int
		for _, f := range strings.Fields(in) {
			var n int
			fmt.Sscan(f, &n)
			gpus = append(gpus, n)
		}
		if got := FormatGPUs(gpus); got != want {
			t.Errorf("FormatGPUs(%v) = %q, want %q", gpus, got, want)
		}
	}
}

// The C reader (c/gangtopo_nodefile.c, in slurmstepd) must read what
// Render writes for every node of the e2e cluster, NICs included.
func TestCReadsWhatGoWrites(t *testing.T) {
	bin := ctest.Build(t)
	dir := t.TempDir()
	cl := lab16(t)
	for i := range cl.Nodes {
		f := FromCluster(cl, topology.NodeID(i))
		path := filepath.Join(dir, f.Node)
		if err := os.WriteFile(path, f.Render(), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--nodefile", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(cSummary(f), string(out)); diff != "" {
			t.Errorf("%s: C read (-want +got):\n%s", f.Node, diff)
		}
	}
}

// Parse accepts a GPU list only where the C reader does, and reads the
// same GPUs from it.
func TestGPUListsAsC(t *testing.T) {
	bin := ctest.Build(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		in        string
		goOK, cOK bool
	}{
		{"0", true, true}, {"0-7", true, true}, {"0,3", true, true}, {"0-3,6", true, true},
		{"0,", true, true}, // one trailing comma
		{",", false, false}, {",0", false, false}, {"0,,1", false, false}, {"0,,", false, false},
		{"0-63", true, true}, {"63", true, true}, {"64", false, false}, {"0-64", false, false},
		{"3-1", false, false}, {"0-", false, false}, {"-1", false, false}, {"1--2", false, false},
		{"0-1-2", false, false}, {"0x1", false, false}, {"99999999999999999999", false, false},
		{"007", true, true}, {"+1", true, true}, {"1-+2", true, true}, {"0,0", true, true},
		// strtol reads "-0" as 0; Go refuses it, the safe way round
		{"-0", false, true},
	} {
		text := "gangtopo-node v1\nnode a\nnic x " + tc.in + "\n"
		f, err := Parse([]byte(text))
		if (err == nil) != tc.goOK {
			t.Errorf("Parse %q: error %v, want ok %v", tc.in, err, tc.goOK)
		}
		path := filepath.Join(dir, "a")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--nodefile", path).Output()
		if err != nil {
			t.Fatal(err)
		}
		if cOK := !strings.HasPrefix(string(out), "err "); cOK != tc.cOK {
			t.Errorf("C reads %q: %q, want ok %v", tc.in, out, tc.cOK)
		} else if cOK && tc.goOK {
			if diff := cmp.Diff(cSummary(f), string(out)); diff != "" {
				t.Errorf("%q: (-Go +C):\n%s", tc.in, diff)
			}
		}
	}
}

// cSummary is what test_c --nodefile prints for f.
func cSummary(f File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s\n", f.Node)
	for _, d := range f.Domains {
		m := d.Members
		if m == "" {
			m = "-"
		}
		fmt.Fprintf(&b, "domain %s %s %s\n", d.Tier, d.Name, m)
	}
	mask := func(g []int) uint64 {
		var m uint64
		for _, i := range g {
			m |= 1 << i
		}
		return m
	}
	for _, s := range f.NVLink {
		fmt.Fprintf(&b, "nvlink %s %x\n", s.Name, mask(s.GPUs))
	}
	for _, s := range f.NICs {
		fmt.Fprintf(&b, "nic %s %x\n", s.Name, mask(s.GPUs))
	}
	return b.String()
}

func lab16(t *testing.T) *topology.Cluster {
	f, err := os.Open("../../docs/examples/lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, "lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
