package topology_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestDefaultSpeedsMatchesTheModelFamily(t *testing.T) {
	tests := []struct {
		model  string
		prefix string
		known  bool
	}{
		{"H100", "h100", true},
		{"h100-sxm5-80gb", "h100", true},
		{"A100-80G", "a100", true},
		{"A10", "a10", true}, // a100 does not match "a10"
		{"GB200", "gb200", true},
		{"B200", "b200", true},
		{"L40S", "l40s", true}, // not l40: the longer prefix
		{"mi300x", "", false},  // the generic row
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			row, known := topology.DefaultSpeeds(tc.model)
			if row.Prefix != tc.prefix || known != tc.known {
				t.Errorf("DefaultSpeeds(%q) = row %q known %v, want %q %v", tc.model, row.Prefix, known, tc.prefix, tc.known)
			}
		})
	}
}

const speedsFile = `version: v1
name: speeds
hardware:
  dgx:
    cpus: 8
    memory_mib: 1024
    gpus: {count: 8, model: H100, nvlink: nvswitch}
    nics:
      - {name: mlx5_0, rate_gbps: 400}
      - {name: mlx5_1, rate_gbps: 400}
  slow:
    cpus: 8
    memory_mib: 1024
    gpus: {count: 4, model: A100, nvlink: nvswitch, nvlink_gbytes: 100, pcie_gbytes: 8, dense_tflops: 200}
  pcie:
    cpus: 8
    memory_mib: 1024
    gpus: {count: 2, model: t4}
nodes:
  - {names: "d[1-2]", hardware: dgx}
  - {names: s1, hardware: slow}
  - {names: p1, hardware: pcie}
topology:
  leaf_oversubscription: 2
  spine_oversubscription: 4
  spines:
    - name: sp1
      leaves:
        - {name: l1, nodes: "d[1-2]"}
        - {name: l2, nodes: s1, oversubscription: 3}
    - name: sp2
      oversubscription: 1.5
      leaves:
        - {name: l3, nodes: p1}
`

func TestParseSpeeds(t *testing.T) {
	c, err := topology.Parse(strings.NewReader(speedsFile), "speeds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		Speeds  topology.Speeds
		Assumed bool
	}
	got := map[string]node{}
	for _, n := range c.Nodes {
		got[n.Name] = node{n.Speeds, n.SpeedsAssumed}
	}
	want := map[string]node{
		// NVLink and PCIe from the H100 row; NIC from the file: 2 x 400 Gb/s
		// = 800 Gb/s = 100 GB/s over 8 GPUs = 12.5 GB/s a GPU.
		"d1": {topology.Speeds{DenseTFLOPS: 989, NVLinkGBs: 450, PCIeGBs: 64, NICGBs: 12.5}, false},
		"d2": {topology.Speeds{DenseTFLOPS: 989, NVLinkGBs: 450, PCIeGBs: 64, NICGBs: 12.5}, false},
		// compute, NVLink and PCIe from the file; no NICs: DGX A100's 25
		// GB/s a GPU.
		"s1": {topology.Speeds{DenseTFLOPS: 200, NVLinkGBs: 100, PCIeGBs: 8, NICGBs: 25}, false},
		// no NVLink; T4's compute and PCIe Gen3; the NIC is the table's
		// assumption.
		"p1": {topology.Speeds{DenseTFLOPS: 65, NVLinkGBs: 0, PCIeGBs: 16, NICGBs: 3.125}, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("speeds (-want +got):\n%s", diff)
	}
	over := map[string]float64{}
	for _, tier := range []topology.Tier{topology.TierLeaf, topology.TierSpine} {
		for _, id := range c.ByTier[tier] {
			over[c.Domains[id].Name] = c.Domains[id].Oversubscription
		}
	}
	// l1 takes the topology's leaf default, l2 its own; sp1 the spine
	// default, sp2 its own.
	wantOver := map[string]float64{"l1": 2, "l2": 3, "l3": 2, "sp1": 4, "sp2": 1.5}
	if diff := cmp.Diff(wantOver, over); diff != "" {
		t.Errorf("oversubscription (-want +got):\n%s", diff)
	}
}

func TestSpeedsDefaultToTheModelAndNonBlocking(t *testing.T) {
	c := parseExample(t, "dgx-h100-256.yaml")
	for _, tier := range []topology.Tier{topology.TierLeaf, topology.TierSpine} {
		for _, id := range c.ByTier[tier] {
			if o := c.Domains[id].Oversubscription; o != 1 {
				t.Fatalf("%s oversubscription = %g, want 1 (non-blocking) when the file gives none", c.Domains[id].Name, o)
			}
		}
	}
	// 8 x 400 Gb/s = 3,200 Gb/s = 400 GB/s over 8 GPUs.
	if got := c.Nodes[0].Speeds; got != (topology.Speeds{DenseTFLOPS: 989, NVLinkGBs: 450, PCIeGBs: 64, NICGBs: 50}) {
		t.Errorf("dgx001 speeds = %+v", got)
	}
}

func TestParseSpeedErrors(t *testing.T) {
	tests := []struct {
		name      string
		from, to  string
		want      string
		wantLines int
	}{
		{"speed on a GPU without NVLink", "gpus: {count: 2, model: t4}", "gpus: {count: 2, model: t4, nvlink_gbytes: 50}",
			"speeds.yaml:18: hardware.pcie.gpus.nvlink_gbytes: given, but the GPUs have no NVLink (nvlink: none)", 1},
		{"negative speed", "pcie_gbytes: 8", "pcie_gbytes: -8",
			"hardware.slow.gpus.pcie_gbytes: -8 GB/s is out of range (want a number above 0 and at most 100000)", 1},
		{"speed not a number", "nvlink_gbytes: 100", "nvlink_gbytes: fast",
			"hardware.slow.gpus.nvlink_gbytes: want a number, got \"fast\"", 1},
		{"oversubscription below 1", "oversubscription: 3", "oversubscription: 0.5",
			"topology.spines[0].leaves[1].oversubscription: 0.5 is out of range (want a ratio of downlink to uplink bandwidth from 1, non-blocking, to 64)", 1},
		{"unknown key on a leaf", "oversubscription: 3", "oversubscribed: 3", "unknown key \"oversubscribed\"", 1},
		{"compute out of range", "dense_tflops: 200", "dense_tflops: 0",
			"hardware.slow.gpus.dense_tflops: 0 TFLOP/s is out of range (want a number above 0 and at most 100000)", 1},
		{"default out of range", "leaf_oversubscription: 2", "leaf_oversubscription: 100",
			"topology.leaf_oversubscription: 100 is out of range", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(speedsFile, tc.from, tc.to, 1)
			if doc == speedsFile {
				t.Fatalf("%q is not in the file", tc.from)
			}
			_, err := topology.Parse(strings.NewReader(doc), "speeds.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if n := len(strings.Split(err.Error(), "\n")); n != tc.wantLines {
				t.Errorf("%d errors, want %d:\n%v", n, tc.wantLines, err)
			}
		})
	}
}

func TestSpineOversubscriptionNeedsSpines(t *testing.T) {
	doc := `version: v1
name: flat
hardware:
  box: {cpus: 8, memory_mib: 1024, gpus: {count: 1, model: t4}}
nodes:
  - {names: n1, hardware: box}
topology:
  spine_oversubscription: 2
  leaves: [{name: l1, nodes: n1}]
`
	_, err := topology.Parse(strings.NewReader(doc), "flat.yaml")
	want := "flat.yaml:8: topology.spine_oversubscription: given, but the topology has no spines"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

// Specs written in code get the same checks as files.
func TestBuildChecksSpeeds(t *testing.T) {
	spec := topology.Spec{Name: "x",
		Nodes:  []topology.NodeSpec{{Name: "n1", CPUs: 1, GPUs: []topology.GPUSpec{{Model: "t4"}}, NVLinkGBs: 10}},
		Leaves: []topology.LeafSpec{{Name: "l1", Nodes: []string{"n1"}, Oversubscription: 0.5}}}
	_, err := topology.Build(spec)
	for _, want := range []string{"node n1: nvlink_gbytes 10 given, but its GPUs have no NVLink", "leaf l1: oversubscription 0.5 is out of range"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want %q", err, want)
		}
	}
}

// A partition of a cluster keeps its nodes' place in the tree and the
// fabric's figures; switches left empty go.
func TestSubset(t *testing.T) {
	spec, err := topology.ParseSpec(strings.NewReader(speedsFile), "speeds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// d2 and s1: leaves l1 (d2 only) and l2 of spine sp1; sp2 and l3 go.
	sub := spec.Subset("team", func(n string) bool { return n == "d2" || n == "s1" })
	c, err := topology.Build(sub)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Nodes, Leaves, Spines int
		L2Over                float64
		S1NVLink              float64
	}
	l2, _ := c.DomainByName("l2")
	s1, _ := c.NodeByName("s1")
	g := got{len(c.Nodes), len(c.ByTier[topology.TierLeaf]), len(c.ByTier[topology.TierSpine]),
		c.Domains[l2].Oversubscription, c.Nodes[s1].Speeds.NVLinkGBs}
	if diff := cmp.Diff(got{2, 2, 1, 3, 100}, g); diff != "" {
		t.Errorf("subset (-want +got):\n%s", diff)
	}
}
