package e2e

import (
	"context"
	"os"
	"testing"
)

func init() {
	register("SmallJobsKeepWholeNodesWhole", testSmallJobsKeepWholeNodesWhole)
}

// fragOutcome is what one run of the fragmentation sequence leaves.
type fragOutcome struct {
	smallOnWhole int    // small jobs that broke a whole free node
	gangState    string // RUNNING or PENDING
	gangLeaves   []string
}

// testSmallJobsKeepWholeNodesWhole runs one sequence twice, with the
// gangtopo plugins and with stock Slurm, and asserts the difference.
//
// Start: leaf3 and leaf4 full; leaf2's four nodes fragmented by six 1-GPU
// jobs each (2 GPUs free per node, 8 in all); leaf1 entirely free. Then
// four small jobs (1, 2, 1, 2 GPUs) and a 4-node gang (-N4
// --gpus-per-node=8).
//
// Stock Slurm picks the leaf with the fewest nodes that have a free GPU
// (leaf1 and leaf2 tie at 4; the lower index wins) and the lowest node in
// it: the small jobs break node01, and the gang waits for 4 whole nodes.
// With gangtopo the small jobs fill leaf2's holes, leaf1 stays whole, and
// the gang starts at once inside it. gangtopo runs under jobs: all, as for
// every sequence this suite runs on stock Slurm (labConfigAll).
func testSmallJobsKeepWholeNodesWhole(t *testing.T) {
	writeConfig(t, labConfigAll)
	defer writeConfig(t, labConfig)
	with := fragSequence(t)
	var stock fragOutcome
	asStockSlurm(t, func() { stock = fragSequence(t) })
	t.Logf("with gangtopo: %+v; stock Slurm: %+v", with, stock)
	if with.smallOnWhole != 0 || with.gangState != "RUNNING" || len(with.gangLeaves) != 1 || with.gangLeaves[0] != "leaf1" {
		t.Errorf("with gangtopo: %d small jobs broke whole nodes, gang %s in %v; want 0, RUNNING in [leaf1]",
			with.smallOnWhole, with.gangState, with.gangLeaves)
	}
	if stock.smallOnWhole == 0 || stock.gangState != "PENDING" {
		t.Errorf("stock Slurm: %d small jobs broke whole nodes, gang %s; the reference behaviour is > 0 and PENDING",
			stock.smallOnWhole, stock.gangState)
	}
}

func fragSequence(t *testing.T) fragOutcome {
	t.Helper()
	reset(t)
	fill(t, whole("node09", "node10", "node11", "node12", "node13", "node14", "node15", "node16"))
	fillOnes(t, 6, "node05", "node06", "node07", "node08")
	var out fragOutcome
	for _, g := range []string{"1", "2", "1", "2"} {
		before := map[string]bool{}
		for _, n := range freeWholeNodes(t) {
			before[n] = true
		}
		j := running(t, "--gpus="+g, "--cpus-per-gpu=1")
		if before[j.Nodes[0]] {
			out.smallOnWhole++
		}
	}
	gang := settle(t, submit(t, "-N4", "--gpus-per-node=8", "--cpus-per-gpu=1"))
	out.gangState = gang.State
	if gang.State == "RUNNING" {
		out.gangLeaves = leavesOf(t, gang)
	}
	return out
}

// asStockSlurm runs f on stock Slurm: the same daemons without the
// gangtopo plugins (no JobSubmitPlugins, an empty plugstack), then puts
// the plugins back.
func asStockSlurm(t *testing.T, f func()) {
	t.Helper()
	stockPlugins := gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))
	stockPlugins.JobSubmit, stockPlugins.Spank = false, false
	if err := lab.Reconfigure(context.Background(), stockPlugins); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lab.Reconfigure(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))); err != nil {
			t.Fatal(err)
		}
	}()
	f()
}
