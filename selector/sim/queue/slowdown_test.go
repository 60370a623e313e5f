package queue

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/stepcost"
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

// spreadPolicy places a job four GPUs a node at most, in node order: a
// scheduler that splits gangs, so the grounded model has something to
// charge.
type spreadPolicy struct{ c *topology.Cluster }

func (p spreadPolicy) Name() string { return "spread" }

func (p spreadPolicy) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	var a occupancy.Allocation
	left := r.GPUs
	for n := range p.c.Nodes {
		free := s.NodeFree(topology.NodeID(n))
		na := occupancy.NodeAlloc{Node: topology.NodeID(n), Milli: occupancy.WholeGPU, CPUMilli: 0}
		for g := 0; g < len(free) && len(na.GPUs) < 4 && left > 0; g++ {
			if free[g] == occupancy.WholeGPU {
				na.GPUs = append(na.GPUs, g)
				left--
			}
		}
		if len(na.GPUs) > 0 {
			a.Nodes = append(a.Nodes, na)
		}
		if left == 0 {
			return a, true
		}
	}
	return occupancy.Allocation{}, false
}

// The grounded model charges each job what stepcost says of its
// placement: its run time (and its GPUs' hold) is its duration times the
// model's factor, at the configured band.
func TestGroundedSlowdownCharged(t *testing.T) {
	c := topotest.FatTree(1, 2, 2, topotest.DGXH100)
	jobs := []Job{
		{Name: "a", Submit: 0, Duration: 1000, GPUs: 8},
		{Name: "b", Submit: 0, Duration: 500, GPUs: 16},
		{Name: "c", Submit: 0, Duration: 100, GPUs: 1},
	}
	four := func(n topology.NodeID, first int) occupancy.NodeAlloc {
		return occupancy.NodeAlloc{Node: n, Milli: occupancy.WholeGPU, GPUs: []int{first, first + 1, first + 2, first + 3}}
	}
	// a: GPUs 0-3 of node1 and node2; b: 4-7 of node1 and node2, 0-3 of
	// node3 and node4; c one of the GPUs left on node3.
	allocs := map[string]occupancy.Allocation{
		"a": {Nodes: []occupancy.NodeAlloc{four(0, 0), four(1, 0)}},
		"b": {Nodes: []occupancy.NodeAlloc{four(0, 4), four(1, 4), four(2, 0), four(3, 0)}},
	}
	for _, band := range []stepcost.Band{stepcost.Low, stepcost.High} {
		res, err := Replay(c, jobs, spreadPolicy{c}, Config{CPUsPerGPU: 1, Grounded: &Grounded{Band: band}})
		if err != nil {
			t.Fatal(err)
		}
		m := stepcost.New(c, band)
		for i, o := range res.Outcomes {
			want := 1.0 // one GPU: nothing to send
			if a, ok := allocs[jobs[i].Name]; ok {
				want = m.Factor(jobs[i].Name, a)
				if !(want > 1) {
					t.Errorf("%s band %s: a gang split 4 GPUs a node has factor %g, want above 1", jobs[i].Name, band, want)
				}
			}
			if math.Abs(o.Slowdown-want) > 1e-12 || math.Abs(o.End-o.Start-jobs[i].Duration*want) > 1e-6 {
				t.Errorf("%s band %s: slowdown %g, run %g s; want %g, %g s", jobs[i].Name, band, o.Slowdown, o.End-o.Start, want, jobs[i].Duration*want)
			}
		}
	}
}
