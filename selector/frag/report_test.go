package frag

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestBuildReport(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	take := func(name string, gpus []int, cpu int32) {
		id, _ := c.NodeByName(name)
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000, CPUMilli: cpu}}}); err != nil {
			t.Fatal(err)
		}
	}
	// leaf1: node01-03 full, node04 has 1 GPU busy (7 free) but all 64
	// CPUs taken: its 7 GPUs are stranded. leaf2-4 untouched.
	for _, n := range []string{"node01", "node02", "node03"} {
		take(n, []int{0, 1, 2, 3, 4, 5, 6, 7}, 8000)
	}
	take("node04", []int{0}, 64000)
	drained, _ := c.NodeByName("node16")
	s.SetState(drained, occupancy.StateDrain)

	w := Workload{Node: []NodeShape{{GPUs: 1, Milli: 1000, CPUMilli: 1000, Weight: 1}}}
	r := NewMeter(c, &w).BuildReport(s)

	// 25 busy GPUs; idle on usable nodes: 7 (node04) + 11*8 = 95 GPUs;
	// node16's 8 are offline.
	if r.AllocatedMilli != 25000 || r.IdleMilli != 95000 || r.OfflineMilli != 8000 {
		t.Errorf("allocated/idle/offline = %d/%d/%d, want 25000/95000/8000", r.AllocatedMilli, r.IdleMilli, r.OfflineMilli)
	}
	// The only shape needs a CPU: node04's 7 GPUs are fragment and stranded.
	if r.FragMilli != 7000 || r.StrandedMilli != 7000 {
		t.Errorf("frag %g stranded %g, want 7000 and 7000", r.FragMilli, r.StrandedMilli)
	}
	wantLargest := []Block{
		{topology.TierNVLink, "node05/nvl0", 8}, {topology.TierNode, "node05", 8},
		{topology.TierLeaf, "leaf2", 32}, {topology.TierSpine, "spine2", 56}, {topology.TierCluster, "lab16", 95},
	}
	if diff := cmp.Diff(wantLargest, r.Largest); diff != "" {
		t.Errorf("Largest (-want +got):\n%s", diff)
	}
	count := map[int]int{}
	for _, st := range r.Startable {
		count[st.GPUs] = st.Count
	}
	// 8-GPU: 11 whole nodes (node05..node15); 16: leaf2 2 + leaf3 2 + leaf4
	// 1 (24 free) + leaf1 0 (7 free) = 5; 32: leaf2 and leaf3 = 2.
	wantCount := map[int]int{1: 95, 2: 3 + 44, 4: 1 + 22, 8: 11, 16: 5, 32: 2, 64: 0}
	if diff := cmp.Diff(wantCount, count); diff != "" {
		t.Errorf("Startable (-want +got):\n%s", diff)
	}
	if r.Leaves[0].WholeFreeNodes != 0 || r.Leaves[3].WholeFreeNodes != 3 || r.Leaves[3].FreeGPUs != 24 {
		t.Errorf("leaves = %+v", r.Leaves)
	}
}
