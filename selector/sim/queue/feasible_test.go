package queue

import (
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// busy allocates the given GPUs of a fresh snapshot.
func busy(t *testing.T, c *topology.Cluster, parts map[topology.NodeID][]int) *occupancy.Snapshot {
	t.Helper()
	s := occupancy.New(c)
	if err := s.Allocate(alloc(parts)); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTightestFeasible(t *testing.T) {
	lab := topotest.Lab16() // 4 nodes per leaf, 2 leaves per spine
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	// leaf1 (nodes 0-3) full but for 4 GPUs on node 0; the rest free.
	leaf1Busy := map[topology.NodeID][]int{0: {0, 1, 2, 3}, 1: all, 2: all, 3: all}
	// Every node has 5 busy GPUs: 3 free per node, 12 per leaf.
	fiveEach := map[topology.NodeID][]int{}
	for n := topology.NodeID(0); n < 16; n++ {
		fiveEach[n] = []int{0, 1, 2, 3, 4}
	}
	// Only nodes 0 (leaf1) and 4 (leaf2) have free GPUs, 8 each.
	twoLeaves := map[topology.NodeID][]int{}
	for n := topology.NodeID(0); n < 16; n++ {
		if n != 0 && n != 4 {
			twoLeaves[n] = all
		}
	}
	tests := []struct {
		name string
		busy map[topology.NodeID][]int
		gpus int
		want topology.Tier
	}{
		{"empty cluster, 8 GPUs: one node's NVSwitch", nil, 8, topology.TierNVLink},
		{"empty cluster, 16 GPUs: a leaf", nil, 16, topology.TierLeaf},
		{"empty cluster, 64 GPUs: a spine", nil, 64, topology.TierSpine},
		{"empty cluster, 128 GPUs: all", nil, 128, topology.TierCluster},
		{"4 GPUs still fit node 0", leaf1Busy, 4, topology.TierNVLink},
		{"3 free per node: 4 GPUs need a leaf", fiveEach, 4, topology.TierLeaf},
		{"3 free per node: 13 GPUs need a spine (12 per leaf)", fiveEach, 13, topology.TierSpine},
		{"8 free in each of two leaves: 16 GPUs need the spine", twoLeaves, 16, topology.TierSpine},
		{"more than free: none", twoLeaves, 17, 0},
	}
	f := newFeasibility(lab)
	for _, tc := range tests {
		s := occupancy.New(lab)
		if tc.busy != nil {
			s = busy(t, lab, tc.busy)
		}
		if got := f.tightest(s, tc.gpus); got != tc.want {
			t.Errorf("%s: tightest = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTightestFeasibleModels(t *testing.T) {
	// One leaf: two 4-GPU T4 boxes and one 4-GPU A10 box. 6 free T4s and
	// 4 free A10s: 8 GPUs of one model fit nowhere, so models are pooled.
	s := topology.Spec{Name: "mixed", Leaves: []topology.LeafSpec{{Name: "l1", Nodes: []string{"t1", "t2", "a1"}}},
		Nodes: []topology.NodeSpec{topotest.SmallGPUNode("t1", "t4", 4), topotest.SmallGPUNode("t2", "t4", 4), topotest.SmallGPUNode("a1", "a10", 4)}}
	c := topotest.MustBuild(s)
	snap := busy(t, c, map[topology.NodeID][]int{0: {0, 1}})
	f := newFeasibility(c)
	for gpus, want := range map[int]topology.Tier{1: topology.TierNVLink, 2: topology.TierNode, 6: topology.TierLeaf, 8: topology.TierLeaf, 11: 0} {
		if got := f.tightest(snap, gpus); got != want {
			t.Errorf("%d GPUs: tightest = %v, want %v", gpus, got, want)
		}
	}
}
