package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("ControllerRebindsStaleJob", testControllerRebindsStaleJob)
}

// testControllerRebindsStaleJob: a 2-GPU job decided while node02 and
// node03 had holes is bound to them and to node16, the one whole node left
// (to those of them an earlier test's held decisions left room on); it is
// held, and meanwhile other jobs take all three nodes and node09 frees up. Released, it waits: Slurm holds it to its binding,
// though node09 is free. One controller cycle (`gangtopo daemon --role
// controller --once --config gangtopo.yaml`) re-binds it to node09, where
// Slurm starts it; the controller's log says so.
func testControllerRebindsStaleJob(t *testing.T) {
	reset(t)
	busy := whole("node01", "node04", "node05", "node06", "node07", "node08", "node09", "node10",
		"node11", "node12", "node13", "node14", "node15")
	busy["node02"], busy["node03"] = 6, 6
	fill(t, busy)
	id := submit(t, "--hold", "--gpus=2", "--cpus-per-gpu=1")
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	if !strings.HasPrefix(j.Features, "[gt_node0") && !strings.HasPrefix(j.Features, "gt_node") || strings.Contains(j.Features, "node09") {
		t.Fatalf("job %s bound to %q; want node02, node03, node16 or some of them", id, j.Features)
	}

	// the bound nodes fill up, node09 frees
	fill(t, map[string]int{"node02": 2, "node03": 2, "node16": 8})
	cancelOn(t, "node09")
	waitIdle(t, "node09")
	if _, err := lab.Run(ctxT(t), 0, "scontrol", "release", id); err != nil {
		t.Fatal(err)
	}
	if j := settle(t, id); j.State != "PENDING" {
		t.Fatalf("released job %s is %s on %v before any re-binding; want it pending on its stale binding", id, j.State, j.Nodes)
	}

	out, err := gangtopo(t, "daemon", "--role", "controller", "--once", "--topology", clusterFile, "-o", snapshotFile, "--config", configFile)
	if err != nil {
		t.Fatalf("controller cycle: %v\n%s", err, out)
	}
	if !strings.Contains(out, "re-bound a stale pending job") || !strings.Contains(out, `"job":"`+id+`"`) {
		t.Errorf("controller log has no re-binding line for job %s:\n%s", id, out)
	}
	started := waitRunning(t, id, 15*time.Second)
	if strings.Join(started.Nodes, ",") != "node09" || started.Features != "gt_node09" ||
		!strings.HasPrefix(started.AdminComment, "gangtopo v1 placed") || !strings.Contains(started.AdminComment, "bound=node09") {
		t.Errorf("after one controller cycle job %s runs on %v with Features %q, decision %q; want node09, gt_node09",
			id, started.Nodes, started.Features, started.AdminComment)
	}
}

// waitIdle waits until a node has nothing allocated (scontrol's State,
// which leaves out no flags).
func waitIdle(t *testing.T, node string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := lab.Run(ctxT(t), 0, "scontrol", "-o", "show", "node", node)
		must(t, err)
		if strings.Contains(out, " State=IDLE ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not idle after 30 s: %s", node, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRunning waits until the job runs.
func waitRunning(t *testing.T, id string, limit time.Duration) *slurmlab.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if j.State == "RUNNING" {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running after %v: %s (%s), Features %q", id, limit, j.State, j.Reason, j.Features)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
