package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() {
	register("GangStaysInOneLeaf", testGangStaysInOneLeaf)
	register("NVLinkNeverSpansNodes", testNVLinkNeverSpansNodes)
	register("TypedGPUsBecomeWholeNodes", testTypedGPUsBecomeWholeNodes)
}

// testGangStaysInOneLeaf: with node01 and node05 busy, Slurm's node order
// alone would start a 32-GPU job on node02-04 plus node06 (two leaves).
// At --gang-topology=leaf it must land on the four nodes of one leaf,
// 8 GPUs each.
func testGangStaysInOneLeaf(t *testing.T) {
	reset(t)
	fill(t, whole("node01", "node05"))
	j := running(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	if leaves := leavesOf(t, j); len(leaves) != 1 || leaves[0] == "leaf1" || leaves[0] == "leaf2" {
		t.Errorf("32-GPU gang on %v (leaves %v), want one whole leaf of leaf3/leaf4", j.Nodes, leaves)
	}
	if len(j.Nodes) != 4 || j.NumGPUs() != 32 {
		t.Errorf("gang on %d nodes with %d GPUs (%v), want 4 x 8", len(j.Nodes), j.NumGPUs(), j.GPUs)
	}
	if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed request=leaf:required gpus=32 shape=4x8") {
		t.Errorf("decision %q", j.AdminComment)
	}
}

// testNVLinkNeverSpansNodes: an 8-GPU job at nvlink takes one whole node
// (on NVSwitch nodes the node is the NVLink domain), and when no node has
// 8 free GPUs it waits rather than spanning two; 16 GPUs with slice=8
// take two whole nodes.
func testNVLinkNeverSpansNodes(t *testing.T) {
	reset(t)
	// every node of leaf1 half busy: 16 free GPUs there, none 8 on one node
	fill(t, map[string]int{"node01": 4, "node02": 4, "node03": 4, "node04": 4})
	j := running(t, "--gpus=8", "--cpus-per-gpu=1", "--gang-topology=nvlink")
	if len(j.Nodes) != 1 || len(j.GPUs[j.Nodes[0]]) != 8 {
		t.Errorf("nvlink job on %v %v, want 8 GPUs of one node", j.Nodes, j.GPUs)
	}
	s := running(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf,slice=8")
	want := map[string]int{}
	got := map[string]int{}
	for _, n := range s.Nodes {
		want[n], got[n] = 8, len(s.GPUs[n])
	}
	if len(s.Nodes) != 2 || !cmp.Equal(want, got) {
		t.Errorf("slice=8 gang on %v, want 2 whole nodes", s.GPUs)
	}
	// fill every other node to 4 free GPUs: no node has 8 free any more
	rest := map[string]int{}
	for _, n := range freeWholeNodes(t) {
		rest[n] = 4
	}
	fill(t, rest)
	p := settle(t, submit(t, "--gpus=8", "--cpus-per-gpu=1", "--gang-topology=nvlink"))
	if p.State != "PENDING" {
		t.Errorf("with no node 8 GPUs free, the nvlink job is %s on %v, want PENDING", p.State, p.GPUs)
	}
}

// testTypedGPUsBecomeWholeNodes: --gpus=h100:16 keeps its model when the
// gang is reshaped to 2 nodes x 8.
func testTypedGPUsBecomeWholeNodes(t *testing.T) {
	reset(t)
	j := running(t, "--gpus=h100:16", "--cpus-per-gpu=1", "--gang-topology=leaf")
	if len(j.Nodes) != 2 || j.NumGPUs() != 16 || len(leavesOf(t, j)) != 1 {
		t.Errorf("h100:16 gang on %v %v", j.Nodes, j.GPUs)
	}
	if !strings.Contains(j.TresPerNode, "gpu:h100:8") {
		t.Errorf("TresPerNode %q, want gres:gpu:h100:8", j.TresPerNode)
	}
}
