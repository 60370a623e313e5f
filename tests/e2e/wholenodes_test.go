package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func init() {
	register("WholeNodeGangWaitsForWholeNodes", testWholeNodeGangWaitsForWholeNodes)
}

// testWholeNodeGangWaitsForWholeNodes: every node half used (4 of its 8
// GPUs), so each leaf has 16 GPUs free and no whole node.
//
// Without whole_node_gangs a 16-GPU leaf gang starts at once over four
// half nodes of one leaf. With it, the same gang waits, rewritten to two
// whole nodes (-N 2 --gpus-per-node=8, shape=2x8 in its decision), and
// starts on the two nodes of one leaf that free.
func testWholeNodeGangWaitsForWholeNodes(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	half := map[string]int{}
	for i := 1; i <= 16; i++ {
		half[fmt.Sprintf("node%02d", i)] = 4
	}
	fill(t, half)
	publish(t)

	split := settle(t, submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"))
	if split.State != "RUNNING" || len(split.Nodes) != 4 || len(leavesOf(t, split)) != 1 {
		t.Fatalf("without whole_node_gangs: gang %s %s (%s) on %v, want RUNNING on four half nodes of one leaf", split.ID, split.State, split.Reason, split.Nodes)
	}
	if _, err := lab.Run(ctxT(t), 0, "scancel", split.ID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, split.ID, 30*time.Second)

	writeConfig(t, labConfig+"whole_node_gangs: true\n")
	t.Cleanup(func() { writeConfig(t, labConfig) })
	publish(t)
	id := submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf")
	j := settle(t, id)
	if j.State != "PENDING" || j.Reason != "Resources" && j.Reason != "Insufficient_resources_in_topology_unit" {
		t.Fatalf("with whole_node_gangs: gang %s %s (%s) on %v, want PENDING (Resources): no leaf has two whole nodes", id, j.State, j.Reason, j.Nodes)
	}
	if !strings.HasPrefix(j.AdminComment, "gangtopo v1 waiting request=leaf:required gpus=16") || !strings.Contains(j.AdminComment, " shape=2x8") ||
		j.NumNodes != 2 || !strings.HasSuffix(j.TresPerNode, "gpu:8") || !allLeaves(j.Features) {
		t.Errorf("with whole_node_gangs: decision %q, NumNodes %d, TresPerNode %q, Features %q; want waiting, shape=2x8, 2 nodes of gpu:8, bound to the four leaves",
			j.AdminComment, j.NumNodes, j.TresPerNode, j.Features)
	}

	// node05 and node06 free: leaf2 has two whole nodes
	cancelOn(t, "node05")
	cancelOn(t, "node06")
	started := settle(t, id)
	if started.State != "RUNNING" || strings.Join(started.Nodes, ",") != "node05,node06" || len(started.GPUs["node05"]) != 8 || len(started.GPUs["node06"]) != 8 {
		t.Errorf("after node05 and node06 freed: gang %s %s on %v (GPUs %v), want RUNNING on node05 and node06, 8 GPUs each", id, started.State, started.Nodes, started.GPUs)
	}
}
