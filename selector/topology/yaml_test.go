package topology_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

func parseExample(t *testing.T, name string) *topology.Cluster {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "examples", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, path)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return c
}

func TestParseExamples(t *testing.T) {
	type summary struct {
		Nodes, GPUs, Leaves, Spines, Blocks, Islands int
		Models                                       []string
		LargestNVLink                                int
	}
	tests := []struct {
		file string
		want summary
	}{
		// 4 DGX (one 8-GPU island each) + 4 PCIe boxes (four bridged pairs each).
		{"lab.yaml", summary{8, 64, 2, 0, 0, 4 + 16, []string{"h100", "a40"}, 8}},
		{"lab16.yaml", summary{16, 128, 4, 2, 0, 16, []string{"h100"}, 8}},
		{"dgx-h100-256.yaml", summary{256, 2048, 16, 2, 0, 256, []string{"h100"}, 8}},
		// DGX-1V's hybrid cube mesh is one connected island; L40S without
		// NVLink are islands of one GPU each; so are the T4/A10 GPUs.
		{"hetero.yaml", summary{32, 8*8 + 4*8 + 4*8 + 16 + 16 + 4, 3, 2, 0, 8 + 4 + 32 + 16 + 16 + 4,
			[]string{"a100-80g", "v100", "l40s", "t4", "a10"}, 8}},
		{"gb200-nvl72.yaml", summary{36, 144, 1, 0, 2, 36, []string{"b200"}, 72}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			c := parseExample(t, tc.file)
			got := summary{
				Nodes: len(c.Nodes), GPUs: len(c.GPUs), Leaves: len(c.ByTier[topology.TierLeaf]),
				Spines: len(c.ByTier[topology.TierSpine]), Blocks: len(c.ByTier[topology.TierBlock]),
				Islands: len(c.ByTier[topology.TierNVLink]), Models: c.Models, LargestNVLink: c.LargestNVLinkDomain(),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTreeNumbering(t *testing.T) {
	c := parseExample(t, "lab16.yaml")
	leaf3, ok := c.DomainByName("leaf3")
	if !ok {
		t.Fatal("leaf3 missing")
	}
	d := c.Domains[leaf3]
	// leaf3 holds node09..node12: NodeIDs 8..11, GPUs 64..95.
	if d.NodeLo != 8 || d.NodeHi != 12 || d.GPULo != 64 || d.GPUHi != 96 {
		t.Errorf("leaf3 ranges = nodes [%d,%d) gpus [%d,%d), want [8,12) [64,96)", d.NodeLo, d.NodeHi, d.GPULo, d.GPUHi)
	}
	n := c.Nodes[9]
	if n.Name != "node10" || c.Domains[n.Up[topology.TierSpine]].Name != "spine2" || c.Domains[n.Up[topology.TierLeaf]].Name != "leaf3" {
		t.Errorf("node 9 = %s in %s/%s", n.Name, c.Domains[n.Up[topology.TierSpine]].Name, c.Domains[n.Up[topology.TierLeaf]].Name)
	}
	if n.Up[topology.TierBlock] != topology.NoDomain {
		t.Errorf("node10 has a block")
	}
	if got := n.Links(0, 7); got != 18 {
		t.Errorf("NVSwitch links(0,7) = %d, want 18", got)
	}
	if got := c.GPUs[n.GPU(5)].NICs; len(got) != 1 || n.NICs[got[0]].Name != "mlx5_2" {
		t.Errorf("GPU 5 nearest NICs = %v, want mlx5_2", got)
	}
}

func TestBlockIsNVLinkDomain(t *testing.T) {
	c := parseExample(t, "gb200-nvl72.yaml")
	id, _ := c.NodeByName("gb02-05")
	n := c.Nodes[id]
	nv := c.NVLinkDomain(n.GPU(2))
	if c.Domains[nv].Name != "rack02" || c.Domains[nv].NumGPUs() != 72 {
		t.Errorf("NVLink domain of gb02-05 GPU 2 = %s with %d GPUs, want rack02 with 72", c.Domains[nv].Name, c.Domains[nv].NumGPUs())
	}
}

func TestParseErrors(t *testing.T) {
	const hw = `version: v1
name: bad
hardware:
  box:
    cpus: 8
    memory_mib: 1024
    gpus: {count: 2, model: t4}
`
	tests := []struct {
		name string
		doc  string
		want []string // substrings, each must appear
	}{
		{"unknown top key", hw + "nodes: []\ntopology: {}\ncolour: red\n",
			[]string{"bad.yaml:10: colour: unknown key \"colour\" (allowed here: hardware, name, nodes, topology, version)"}},
		{"threads that do not make whole cores", strings.Replace(hw, "cpus: 8", "cpus: 9\n    threads_per_core: 2", 1) + "nodes: []\ntopology: {}\n",
			[]string{"hardware.box.threads_per_core: 9 CPUs are not whole cores of 2 threads"}},
		{"wrong version", strings.Replace(hw, "v1", "v9", 1) + "nodes: []\ntopology: {}\n",
			[]string{"version: unsupported version \"v9\""}},
		{"unknown hardware", hw + "nodes:\n  - {names: n1, hardware: bx}\ntopology: {leaves: [{name: l1, nodes: n1}]}\n",
			[]string{"bad.yaml:9: nodes[0].hardware: unknown hardware \"bx\" (defined: [box])"}},
		{"duplicate node", hw + "nodes:\n  - {names: \"n[1-2]\", hardware: box}\n  - {names: n2, hardware: box}\ntopology: {leaves: [{name: l1, nodes: \"n[1-2]\"}]}\n",
			[]string{"bad.yaml:10: duplicate node name \"n2\" (first declared at bad.yaml:9)"}},
		{"node in two leaves", hw + "nodes:\n  - {names: \"n[1-2]\", hardware: box}\ntopology:\n  leaves:\n    - {name: l1, nodes: \"n[1-2]\"}\n    - {name: l2, nodes: n2}\n",
			[]string{"bad.yaml:13: node n2 is in two places: leaf l1 and leaf l2"}},
		{"node in no leaf", hw + "nodes:\n  - {names: \"n[1-2]\", hardware: box}\ntopology: {leaves: [{name: l1, nodes: n1}]}\n",
			[]string{"node n2 is in no leaf"}},
		{"undeclared node", hw + "nodes:\n  - {names: n1, hardware: box}\ntopology: {leaves: [{name: l1, nodes: \"n[1-3]\"}]}\n",
			[]string{"leaf l1 lists node n2, which is not declared in nodes"}},
		{"duplicate switch", hw + "nodes:\n  - {names: \"n[1-2]\", hardware: box}\ntopology: {leaves: [{name: l1, nodes: n1}, {name: l1, nodes: n2}]}\n",
			[]string{"duplicate name \"l1\""}},
		{"nic gpu out of range", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus: {count: 2, model: t4}\n    nics: [{name: mlx5_0, gpus: [2]}]", 1) +
			"nodes: []\ntopology: {}\n", []string{"bad.yaml:8: hardware.box.nics[0].gpus[0]: GPU index 2 is out of range (the profile has 2 GPUs: 0..1)"}},
		{"gpu list index out of range", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus:\n      count: 2\n      model: t4\n      nvlink: list\n      list:\n        - {index: 5}", 1) +
			"nodes: []\ntopology: {}\n", []string{"hardware.box.gpus.list[0].index: GPU index 5 is out of range"}},
		{"link to missing peer", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus:\n      count: 2\n      model: t4\n      nvlink: list\n      list:\n        - {index: 0, nvlink: {1: 2, 3: 1}}", 1) +
			"nodes: []\ntopology: {}\n", []string{"hardware.box.gpus.list[0].nvlink.3: link to missing peer GPU 3"}},
		{"matrix too wide", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus:\n      count: 2\n      model: t4\n      nvlink: matrix\n      links: [[-1, 1, 1], [1, -1, 0]]", 1) +
			"nodes:\n  - {names: n1, hardware: box}\ntopology: {leaves: [{name: l1, nodes: n1}]}\n", []string{"links row 0 has 3 entries, want 2"}},
		{"asymmetric matrix", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus:\n      count: 2\n      model: t4\n      nvlink: matrix\n      links: [[-1, 1], [2, -1]]", 1) +
			"nodes:\n  - {names: n1, hardware: box}\ntopology: {leaves: [{name: l1, nodes: n1}]}\n", []string{"links are not symmetric"}},
		{"bad nvlink mode", strings.Replace(hw, "gpus: {count: 2, model: t4}", "gpus: {count: 2, model: t4, nvlink: nvswtich}", 1) +
			"nodes: []\ntopology: {}\n", []string{"hardware.box.gpus.nvlink: unknown value \"nvswtich\""}},
		{"missing required", "version: v1\nname: x\n", []string{"hardware: missing (required)", "nodes: missing (required)", "topology: missing (required)"}},
		{"bad hostlist", hw + "nodes:\n  - {names: \"n[3-1]\", hardware: box}\ntopology: {}\n", []string{"nodes[0].names: hostlist \"n[3-1]\": bad range"}},
		{"syntax error", "version: v1\nname: [\n", []string{"bad.yaml: yaml:"}},
		{"negative count", strings.Replace(hw, "count: 2", "count: -1", 1) + "nodes: []\ntopology: {}\n", []string{"hardware.box.gpus.count: -1 is out of range (want 0..64)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topology.Parse(strings.NewReader(tc.doc), "bad.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"lab.yaml", "hetero.yaml", "gb200-nvl72.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("version: v1\nname: x\nhardware: {}\nnodes: []\ntopology: {}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := topology.Parse(strings.NewReader(string(data)), "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A cluster that parsed must satisfy the numbering invariants.
		for i, n := range c.Nodes {
			if int(n.ID) != i || n.GPUHi < n.GPULo {
				t.Fatalf("node %d numbering broken: %+v", i, n)
			}
			for _, tier := range []topology.Tier{topology.TierNode, topology.TierLeaf, topology.TierCluster} {
				d := c.Domains[n.Up[tier]]
				if n.ID < d.NodeLo || n.ID >= d.NodeHi {
					t.Fatalf("node %s outside its %s range", n.Name, tier)
				}
			}
		}
	})
}
