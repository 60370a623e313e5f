package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("SpareMovesToRepairedNode", testSpareMovesToRepairedNode)
}

// testSpareMovesToRepairedNode: issue 26's spares that move
// (spares.moving, docs/admin.md). As in SpareRestartsAtOnce, a 24-GPU
// leaf:required gang runs on node01-03 with one whole node busy in every
// other leaf; node02 fails and the gang restarts at once on node01, node03
// and leaf1's spare node04. node02 is repaired: with fixed spares it would
// be an ordinary node again and leaf1 would keep no spare until the gang
// ends; moving, it is leaf1's spare. Four whole-node jobs: three take the
// free nodes outside the spares (node07, node11, node15), the fourth pends
// rather than take node02, its decision excluding it. Then node03 fails
// under the restarted gang: it restarts again inside leaf1, on node01,
// node02 and node04.
func testSpareMovesToRepairedNode(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	conf := labSpares + "  moving: true\nrebind:\n  restart_at_once: true\n"
	writeConfig(t, conf)
	t.Cleanup(func() { writeConfig(t, labConfig) })
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(conf, clusterFile, snap)), 0o644))
	c := startController(t, "spares-moving", cfg, snap, "--log-level", "debug")
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)

	fill(t, whole("node05", "node09", "node13"))
	publish(t)
	id := submit(t, "--gpus=24", "--cpus-per-gpu=1", "--gang-topology=leaf:required", "--requeue")
	ran := waitRunning(t, id, 30*time.Second)
	if strings.Join(ran.Nodes, ",") != "node01,node02,node03" {
		t.Fatalf("gang %s runs on %v; want node01-03, the spare node04 excluded", id, ran.Nodes)
	}
	fill(t, whole("node06", "node10", "node14"))
	failed := []string{"node02", "node03"}
	t.Cleanup(func() {
		for _, n := range failed {
			_, _ = lab.Run(context.Background(), 0, "scontrol", "update", "NodeName="+n, "State=RESUME")
		}
	})
	fail := func(node string) {
		t.Helper()
		time.Sleep(3 * time.Second) // the controller has seen the gang running on its nodes
		for _, state := range []string{"State=DOWN", "State=DRAIN"} {
			if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+node, state, "Reason=gangtopo-e2e"); err != nil {
				t.Fatalf("setting %s %s: %v %s", node, state, err, out)
			}
		}
	}

	fail("node02")
	first := waitRestarts(t, id, 1, 30*time.Second)
	if strings.Join(first.Nodes, ",") != "node01,node03,node04" {
		t.Fatalf("gang %s restarted on %v; want node01, node03 and the spare node04\n%s", id, first.Nodes, tail(c.output(), 40))
	}
	if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName=node02", "State=RESUME"); err != nil {
		t.Fatalf("repairing node02: %v %s", err, out)
	}
	waitNodeFree(t, "node02", 30*time.Second)
	publish(t) // the plugin's snapshot, node02 back (the controller's is its own)

	var whole []string
	for range 4 {
		whole = append(whole, submit(t, "--gpus=8", "--cpus-per-gpu=1"))
	}
	deadline := time.Now().Add(45 * time.Second)
	for running := 0; running != 3; {
		running = 0
		for _, w := range whole {
			j, err := lab.ShowJob(ctxT(t), w)
			must(t, err)
			if slices.Contains(j.Nodes, "node02") {
				t.Fatalf("job %s runs on node02, leaf1's spare since its repair (%s)", w, j.AdminComment)
			}
			if j.State == "RUNNING" {
				running++
			}
		}
		if time.Now().After(deadline) {
			out, _ := lab.Run(ctxT(t), 0, "squeue", "-o", "%i %T %R %N")
			t.Fatalf("%d of 4 whole-node jobs run; want 3 (node07, node11, node15):\n%s", running, out)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second) // the fourth stays pending
	for _, w := range whole {
		j, err := lab.ShowJob(ctxT(t), w)
		must(t, err)
		exc, err := hostlist.Expand(j.ExcNodes)
		must(t, err)
		if j.State == "PENDING" && !slices.Contains(exc, "node02") || slices.Contains(j.Nodes, "node02") {
			t.Errorf("job %s %s on %v, ExcNodeList %q: %s; want node02 excluded", w, j.State, j.Nodes, j.ExcNodes, j.AdminComment)
		}
		cancelAndWait(t, w)
	}

	fail("node03")
	second := waitRestarts(t, id, 2, 30*time.Second)
	if strings.Join(second.Nodes, ",") != "node01,node02,node04" {
		t.Errorf("gang %s restarted on %v after node03 failed; want node01, node02 (the spare that moved) and node04\n%s", id, second.Nodes, tail(c.output(), 40))
	}
	t.Logf("Slurm %s: gang %s ran on %v, on %v after node02 failed, on %v after node03 failed: %s", lab.Release, id, ran.Nodes, first.Nodes, second.Nodes, second.AdminComment)
}

// waitRestarts waits for job id to run after its n-th restart.
func waitRestarts(t *testing.T, id string, n int, limit time.Duration) *slurmlab.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if j.State == "RUNNING" && j.Fields["Restarts"] == itoa(n) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running after restart %d within %v: %s, Restarts=%s, %s", id, n, limit, j.State, j.Fields["Restarts"], j.Reason)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitNodeFree waits for node to take work again with nothing on it.
func waitNodeFree(t *testing.T, node string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, err := lab.Run(ctxT(t), 0, "sinfo", "-h", "-N", "-n", node, "-o", "%T")
		must(t, err)
		states := strings.Fields(out) // one a partition
		if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return s != "idle" }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s %q after %v; want idle", node, strings.TrimSpace(out), limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
