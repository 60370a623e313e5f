package slurmgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

func example(t *testing.T, name string) *topology.Cluster {
	t.Helper()
	path := filepath.Join("..", "..", "..", "..", "docs", "examples", name+".yaml")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func checkGolden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	golden.Check(t, path, []byte(got))
}

// TestGolden writes all three files for every example cluster in docs/.
func TestGolden(t *testing.T) {
	for _, ex := range []string{"lab16", "lab", "hetero", "gb200-nvl72", "gb200-nvl72-8racks", "gb200-lab", "dgx-h100-256"} {
		t.Run(ex, func(t *testing.T) {
			c := example(t, ex)
			var topo, gres, feat bytes.Buffer
			warns, err := TopologyConf(&topo, c, TopologyOptions{})
			if err != nil || len(warns) > 0 {
				t.Fatalf("TopologyConf: %v %q", err, warns)
			}
			checkGolden(t, ex+".topology.conf", topo.String())
			if _, err := GresConf(&gres, c, GresOptions{}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, ex+".gres.conf", gres.String())
			if err := Features(&feat, c, ""); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, ex+".features", feat.String())
		})
	}
	t.Run("gb200-nvl72 block plugin", func(t *testing.T) {
		var b bytes.Buffer
		warns, err := TopologyConf(&b, example(t, "gb200-nvl72"), TopologyOptions{Plugin: PluginBlock})
		if err != nil || len(warns) > 0 {
			t.Fatalf("TopologyConf: %v %q", err, warns)
		}
		checkGolden(t, "gb200-nvl72.block.topology.conf", b.String())
	})
	for _, ex := range []string{"gb200-nvl72-8racks", "gb200-lab"} {
		t.Run(ex+" block plugin", func(t *testing.T) {
			var b bytes.Buffer
			if warns, err := TopologyConf(&b, example(t, ex), TopologyOptions{Plugin: PluginBlock}); err != nil || len(warns) > 0 {
				t.Fatalf("TopologyConf: %v %q", err, warns)
			}
			checkGolden(t, ex+".block.topology.conf", b.String())
		})
	}
	for _, ex := range []string{"gb200-nvl72-8racks", "hetero"} {
		t.Run(ex+" topology.yaml", func(t *testing.T) {
			var b bytes.Buffer
			plugin := PluginBlock
			if ex == "hetero" {
				plugin = PluginTree
			}
			if warns, err := TopologyConf(&b, example(t, ex), TopologyOptions{Plugin: plugin, Format: FormatYAML}); err != nil || len(warns) > 0 {
				t.Fatalf("TopologyConf: %v %q", err, warns)
			}
			checkGolden(t, ex+".topology.yaml", b.String())
		})
	}
	t.Run("lab16 scontrol features", func(t *testing.T) {
		var b bytes.Buffer
		if err := Features(&b, example(t, "lab16"), FormatScontrol); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "lab16.scontrol", b.String())
	})
}

// build makes a cluster from topotest node fixtures and leaves.
func build(t *testing.T, nodes []topology.NodeSpec, leaves []topology.LeafSpec) *topology.Cluster {
	t.Helper()
	c, err := topology.Build(topology.Spec{Name: "t", Nodes: nodes, Leaves: leaves})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func body(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func TestTopologyConf(t *testing.T) {
	trays := []topology.NodeSpec{topotest.GB200Tray("gb1"), topotest.GB200Tray("gb2"), topotest.DGXH100("dgx1")}
	mixed := []topology.LeafSpec{{Name: "leaf1", Nodes: []string{"dgx1"}, Blocks: []topology.BlockSpec{{Name: "rack1", Nodes: []string{"gb1", "gb2"}, NVLink: true}}}}
	tests := []struct {
		name  string
		c     *topology.Cluster
		opts  TopologyOptions
		want  []string
		warns []string
	}{{
		// Slurm refuses a switch with both Nodes= and Switches=: the loose
		// node gets a switch of its own under the leaf.
		name: "leaf with a block and a loose node", c: build(t, trays, mixed),
		want: []string{"SwitchName=rack1 Nodes=gb[1-2]", "SwitchName=leaf1-nodes Nodes=dgx1", "SwitchName=leaf1 Switches=rack1,leaf1-nodes"},
	}, {
		name: "block plugin: nodes outside blocks are reported", c: build(t, trays, mixed), opts: TopologyOptions{Plugin: PluginBlock},
		want:  []string{"BlockName=rack1 Nodes=gb[1-2]", "BlockSizes=2"},
		warns: []string{"1 nodes are in no block and get no topology under topology/block: dgx1"},
	}, {
		name: "two leaves get a root switch",
		c: build(t, []topology.NodeSpec{topotest.DGXH100("a1"), topotest.DGXH100("b1")},
			[]topology.LeafSpec{{Name: "la", Nodes: []string{"a1"}}, {Name: "lb", Nodes: []string{"b1"}}}),
		opts: TopologyOptions{Root: "core"},
		want: []string{"SwitchName=la Nodes=a1", "SwitchName=lb Nodes=b1", "SwitchName=core Switches=la,lb"},
	}, {
		// 3 blocks of 2 nodes: 2, 4, then 8, the first size that holds
		// all 6 nodes (a 3-block job needs the 4-block level)
		name: "block sizes double until one holds every block",
		c: build(t, []topology.NodeSpec{topotest.GB200Tray("g1"), topotest.GB200Tray("g2"), topotest.GB200Tray("g3"),
			topotest.GB200Tray("g4"), topotest.GB200Tray("g5"), topotest.GB200Tray("g6")},
			[]topology.LeafSpec{{Name: "leaf1", Blocks: []topology.BlockSpec{{Name: "r1", Nodes: []string{"g1", "g2"}, NVLink: true},
				{Name: "r2", Nodes: []string{"g3", "g4"}, NVLink: true}, {Name: "r3", Nodes: []string{"g5", "g6"}, NVLink: true}}}}),
		opts: TopologyOptions{Plugin: PluginBlock},
		want: []string{"BlockName=r1 Nodes=g[1-2]", "BlockName=r2 Nodes=g[3-4]", "BlockName=r3 Nodes=g[5-6]", "BlockSizes=2,4,8"},
	}, {
		// topology.yaml: the tree (cluster default here) and the blocks;
		// the partition holds dgx1, outside every block, so it gets tree
		name: "topology.yaml with a block and a loose node", c: build(t, trays, mixed), opts: TopologyOptions{Format: FormatYAML},
		want: []string{"---", "- topology: tree", "  cluster_default: true", "  tree:", "    switches:",
			"      - switch: rack1", `        nodes: "gb[1-2]"`, "      - switch: leaf1-nodes", `        nodes: "dgx1"`,
			"      - switch: leaf1", `        children: "rack1,leaf1-nodes"`,
			"- topology: block", "  cluster_default: false", "  block:", "    block_sizes:", "      - 2",
			"    blocks:", "      - block: rack1", `        nodes: "gb[1-2]"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			warns, err := TopologyConf(&b, tc.c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, body(b.String())); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warns, warns, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTopologyConfErrors(t *testing.T) {
	two := build(t, []topology.NodeSpec{topotest.DGXH100("a1"), topotest.DGXH100("b1")},
		[]topology.LeafSpec{{Name: "la", Nodes: []string{"a1"}}, {Name: "lb", Nodes: []string{"b1"}}})
	bad := build(t, []topology.NodeSpec{topotest.DGXH100("a1")}, []topology.LeafSpec{{Name: "leaf|1", Nodes: []string{"a1"}}})
	tests := []struct {
		name string
		c    *topology.Cluster
		opts TopologyOptions
		want string
	}{
		{"block plugin without blocks", two, TopologyOptions{Plugin: PluginBlock}, "cluster t has no blocks, so topology/block has nothing to describe; use the tree plugin"},
		{"root name taken", two, TopologyOptions{Root: "la"}, `root switch name "la" is already a switch, block or node of the cluster; choose another with --root`},
		{"unknown plugin", two, TopologyOptions{Plugin: "dragonfly"}, `unknown topology plugin "dragonfly" (want tree or block)`},
		{"unknown format", two, TopologyOptions{Format: "topology.json"}, `unknown topology file format "topology.json" (want topology.conf or topology.yaml)`},
		{"topology.yaml: block default without blocks", two, TopologyOptions{Format: FormatYAML, Plugin: PluginBlock}, "cluster t has no blocks, so a block topology cannot be the default; use --plugin tree"},
		{"name Slurm would misread", bad, TopologyOptions{}, `leaf name "leaf|1" cannot be used in Slurm configuration`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TopologyConf(&bytes.Buffer{}, tc.c, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestGresConf(t *testing.T) {
	oneLeaf := func(nodes ...topology.NodeSpec) *topology.Cluster {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		return build(t, nodes, []topology.LeafSpec{{Name: "l", Nodes: names}})
	}
	odd := topotest.PCIeTwoSocket("odd")
	odd.CPUs = 30 // 30 cores over 2 NUMA nodes: 15 each would be fine...
	odd.GPUs[0].NUMA = 2
	tests := []struct {
		name  string
		c     *topology.Cluster
		opts  GresOptions
		want  []string
		warns []string
	}{{
		// DGX-1: the cube-mesh row of each GPU; 80 CPUs with 2 threads per
		// core = 40 cores, 20 per socket.
		name: "DGX-1 links and cores", c: oneLeaf(topotest.DGX1("v1")), opts: GresOptions{ThreadsPerCore: 2, NoAutoDetectLine: true},
		want: []string{
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia0 Links=-1,1,1,2,2,0,0,0 Cores=0-19",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia1 Links=1,-1,2,1,0,2,0,0 Cores=0-19",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia2 Links=1,2,-1,2,0,0,1,0 Cores=0-19",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia3 Links=2,1,2,-1,0,0,0,1 Cores=0-19",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia4 Links=2,0,0,0,-1,1,1,2 Cores=20-39",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia5 Links=0,2,0,0,1,-1,2,1 Cores=20-39",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia6 Links=0,0,1,0,1,2,-1,2 Cores=20-39",
			"NodeName=v1 Name=gpu Type=v100 File=/dev/nvidia7 Links=0,0,0,1,2,1,2,-1 Cores=20-39",
		},
	}, {
		// No NVLink at all: no Links=. The GPU on NUMA 2 makes three NUMA
		// nodes, and 30 cores do not split over 3... they do (10 each):
		// the NUMA count is what is inferred.
		name: "no NVLink, NUMA count inferred from the highest id", c: oneLeaf(odd), opts: GresOptions{DevDir: "/lab/dev", NoAutoDetectLine: true},
		want: []string{
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia0 Cores=20-29",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia1 Cores=0-9",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia2 Cores=0-9",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia3 Cores=0-9",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia4 Cores=10-19",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia5 Cores=10-19",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia6 Cores=10-19",
			"NodeName=odd Name=gpu Type=l40s File=/lab/dev/nvidia7 Cores=10-19",
		},
	}, {
		// 30 cores over 4 NUMA nodes (forced) do not divide: no Cores=.
		name: "uneven split: no Cores, with a warning", c: oneLeaf(topotest.SmallGPUNode("t4", "t4", 1)), opts: GresOptions{NUMANodes: 3, NoAutoDetectLine: true},
		want:  []string{"NodeName=t4 Name=gpu Type=t4 File=/dev/nvidia0"},
		warns: []string{"node t4: 16 CPUs (1 threads per core) do not split evenly over 3 NUMA nodes; no Cores="},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			warns, err := GresConf(&b, tc.c, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, body(b.String())); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warns, warns, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeFeatures(t *testing.T) {
	c := example(t, "hetero")
	tests := []struct {
		node string
		want []string
	}{
		{"a100-01", []string{"gt_spine1", "gt_leaf-a100", "gt_a100-01", "gt_a100-80g"}},
		{"t4x2-03", []string{"gt_spine2", "gt_leaf-infer", "gt_t4x2-03", "gt_t4"}},
	}
	for _, tc := range tests {
		id, _ := c.NodeByName(tc.node)
		got, err := NodeFeatures(c, &c.Nodes[id])
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.node, diff)
		}
	}
	nvl := example(t, "gb200-nvl72")
	id, _ := nvl.NodeByName("gb02-05")
	got, _ := NodeFeatures(nvl, &nvl.Nodes[id])
	if diff := cmp.Diff([]string{"gt_leaf1", "gt_rack02", "gt_gb02-05", "gt_b200"}, got); diff != "" {
		t.Errorf("block member (-want +got):\n%s", diff)
	}
}
