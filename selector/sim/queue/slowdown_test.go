package queue

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestSlowdownFactor(t *testing.T) {
	s := DefaultSlowdown()
	tests := []struct {
		name            string
		tier            topology.Tier
		nodes, minNodes int
		want            float64
	}{
		{"one NVLink island", topology.TierNVLink, 1, 1, 1.0},
		{"one server, two islands", topology.TierNode, 1, 1, 1.1},
		{"two whole nodes in a leaf", topology.TierLeaf, 2, 2, 1.2},
		// 16 GPUs on 4 nodes where 2 would do: 1.2 * (1 + 0.05*2/2)
		{"16 GPUs on four nodes of a leaf", topology.TierLeaf, 4, 2, 1.2 * 1.05},
		// 8 GPUs on 8 nodes across spines: 1.5 * (1 + 0.05*7)
		{"8 GPUs scattered over spines", topology.TierCluster, 8, 1, 1.5 * 1.35},
		{"across leaves of a spine", topology.TierSpine, 3, 3, 1.4},
	}
	for _, tc := range tests {
		if got := s.Factor(tc.tier, tc.nodes, tc.minNodes); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: Factor = %g, want %g", tc.name, got, tc.want)
		}
	}
	none := NoSlowdown()
	if got := none.Factor(topology.TierCluster, 9, 1); got != 1 {
		t.Errorf("NoSlowdown factor = %g, want 1", got)
	}
}

func TestParseSlowdown(t *testing.T) {
	custom := DefaultSlowdown()
	custom.Tier[topology.TierLeaf], custom.Tier[topology.TierCluster], custom.Spread = 1.3, 2, 0.1
	tests := []struct {
		in   string
		want Slowdown
	}{
		{"", DefaultSlowdown()},
		{"default", DefaultSlowdown()},
		{"none", NoSlowdown()},
		{"leaf=1.3, any=2,spread=0.1", custom},
		{DefaultSlowdown().String(), DefaultSlowdown()},
	}
	for _, tc := range tests {
		got, err := ParseSlowdown(tc.in)
		if err != nil {
			t.Errorf("ParseSlowdown(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSlowdown(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParseSlowdownErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"leaf", "want KEY=VALUE"},
		{"leaf=fast", `slowdown leaf="fast": not a number`},
		{"rack=1.2", `slowdown key "rack": unknown tier "rack"`},
		{"node=0.9", "slowdown node=0.9: want a finite factor >= 1"},
		{"spread=-1", "slowdown spread=-1: want a finite number >= 0"},
		{"any=NaN", "want a finite factor >= 1"},
	}
	for _, tc := range tests {
		_, err := ParseSlowdown(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSlowdown(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

// alloc builds an allocation from node IDs and local GPU indices.
func alloc(parts map[topology.NodeID][]int) occupancy.Allocation {
	var a occupancy.Allocation
	for n := topology.NodeID(0); n < 1024; n++ {
		if g, ok := parts[n]; ok {
			a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: n, GPUs: g, Milli: occupancy.WholeGPU})
		}
	}
	return a
}

func TestReach(t *testing.T) {
	lab := topotest.Lab16()                                  // nodes 0-3 leaf1, 4-7 leaf2 (spine1), 8-15 spine2
	pcie := topotest.SingleNode(topotest.PCIeEightGPU("p1")) // islands are bridged pairs
	nvl := topotest.NVL72(2)                                 // two racks in one leaf
	type want struct {
		Tier  topology.Tier
		Nodes int
	}
	tests := []struct {
		name string
		c    *topology.Cluster
		a    occupancy.Allocation
		want want
	}{
		{"one GPU", lab, alloc(map[topology.NodeID][]int{3: {5}}), want{topology.TierNVLink, 1}},
		{"whole NVSwitch node", lab, alloc(map[topology.NodeID][]int{0: {0, 1, 2, 3, 4, 5, 6, 7}}), want{topology.TierNVLink, 1}},
		{"two nodes of leaf1", lab, alloc(map[topology.NodeID][]int{0: {0}, 3: {1}}), want{topology.TierLeaf, 2}},
		{"leaf1 and leaf2 under spine1", lab, alloc(map[topology.NodeID][]int{1: {0}, 5: {0}}), want{topology.TierSpine, 2}},
		{"across spines", lab, alloc(map[topology.NodeID][]int{1: {0}, 5: {0}, 9: {2}}), want{topology.TierCluster, 3}},
		{"bridged pair", pcie, alloc(map[topology.NodeID][]int{0: {0, 1}}), want{topology.TierNVLink, 1}},
		{"two pairs of a PCIe server", pcie, alloc(map[topology.NodeID][]int{0: {1, 2}}), want{topology.TierNode, 1}},
		{"two trays of one NVL72 rack", nvl, alloc(map[topology.NodeID][]int{0: {0, 1, 2, 3}, 7: {0}}), want{topology.TierNVLink, 2}},
		{"two racks of one leaf", nvl, alloc(map[topology.NodeID][]int{0: {0}, 20: {0}}), want{topology.TierLeaf, 2}},
	}
	for _, tc := range tests {
		tier, nodes := Reach(tc.c, tc.a)
		if diff := cmp.Diff(tc.want, want{tier, nodes}); diff != "" {
			t.Errorf("%s: Reach (-want +got):\n%s", tc.name, diff)
		}
	}
}

func FuzzParseSlowdown(f *testing.F) {
	for _, s := range []string{"default", "none", "leaf=1.3,any=2,spread=0.1", DefaultSlowdown().String(), "node=1e308", "spread=-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sd, err := ParseSlowdown(s)
		if err != nil {
			return
		}
		if err := sd.Validate(); err != nil {
			t.Fatalf("ParseSlowdown(%q) accepted an invalid model: %v", s, err)
		}
		back, err := ParseSlowdown(sd.String())
		if err != nil || back != sd {
			t.Fatalf("ParseSlowdown(%q): %v does not round-trip (%v, %v)", s, sd, back, err)
		}
	})
}
