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
)

func init() {
	register("SpareReplacesFailedNode", testSpareReplacesFailedNode)
}

// labSpares is labConfig keeping one spare a leaf: node04, node08, node12
// and node16 (docs/admin.md, "Spare nodes").
const labSpares = labConfig + "spares:\n  tier: leaf\n  per_domain: 1\n"

// testSpareReplacesFailedNode: issue 26's spares. With one spare a leaf
// and one whole node busy in leaf2, leaf3 and leaf4, a 24-GPU
// leaf:required gang starts on leaf1's three other nodes, node04 (the
// spare) excluded; whole-node jobs fill every node but the spares, and one
// more pends rather than take a spare. One of the gang's nodes is set down
// and drained: Slurm requeues it, no leaf has three free nodes outside the
// spares, and the controller re-binds it to leaf1 with node04 allowed
// (spares=leaf1): it restarts inside leaf1 on the spare.
func testSpareReplacesFailedNode(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	writeConfig(t, labSpares)
	t.Cleanup(func() { writeConfig(t, labConfig) })
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labSpares, clusterFile, snap)), 0o644))
	c := startController(t, "spares", cfg, snap, "--log-level", "debug")
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)
	spares := []string{"node04", "node08", "node12", "node16"}

	fill(t, whole("node05", "node09", "node13"))
	publish(t)
	id := submit(t, "--gpus=24", "--cpus-per-gpu=1", "--gang-topology=leaf:required", "--requeue")
	ran := waitRunning(t, id, 30*time.Second)
	if strings.Join(ran.Nodes, ",") != "node01,node02,node03" || ran.ExcNodes == "" {
		t.Fatalf("gang %s runs on %v, ExcNodeList %q; want node01-03, the spares excluded", id, ran.Nodes, ran.ExcNodes)
	}

	// every node but the spares taken: one more whole-node job pends
	// (the controller re-binds one bound to busy nodes while others are
	// free, so the count settles within a few cycles)
	publish(t)
	var more []string
	for range 7 {
		more = append(more, submit(t, "--gpus=8", "--cpus-per-gpu=1"))
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		running := 0
		for _, m := range more {
			j, err := lab.ShowJob(ctxT(t), m)
			must(t, err)
			for _, n := range j.Nodes {
				if slices.Contains(spares, n) {
					t.Fatalf("job %s (%s) runs on spare %s", m, j.AdminComment, n)
				}
			}
			if j.State == "RUNNING" {
				running++
			}
		}
		if running == 6 {
			break
		}
		if time.Now().After(deadline) {
			out, _ := lab.Run(ctxT(t), 0, "squeue", "-o", "%i %T %R %N")
			t.Fatalf("%d of 7 whole-node jobs run; want 6 (every node but the spares and the gang's):\n%s", running, out)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second) // the seventh stays pending
	if out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-t", "R", "-w", strings.Join(spares, ","), "-o", "%i"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("jobs on the spares: %q (%v); want none", out, err)
	}
	for _, m := range more {
		if _, err := lab.Run(ctxT(t), 0, "scancel", m); err != nil {
			t.Fatal(err)
		}
	}
	// node06/07, node10/11, node14/15 stay busy: no leaf has three free
	// nodes outside its spare
	fill(t, whole("node06", "node10", "node14"))

	failed := "node02"
	t.Cleanup(func() {
		_, _ = lab.Run(context.Background(), 0, "scontrol", "update", "NodeName="+failed, "State=RESUME")
	})
	time.Sleep(3 * time.Second) // the controller has seen the gang running on its nodes
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	deadline = time.Now().Add(time.Minute)
	for !strings.Contains(c.output(), "re-bound a gang requeued after a node failure") {
		if time.Now().After(deadline) {
			show, _ := lab.Run(ctxT(t), 0, "scontrol", "show", "job", id)
			t.Fatalf("the controller did not re-bind gang %s within a minute of %s going down:\n%s\ncontroller:\n%s", id, failed, show, tail(c.output(), 40))
		}
		time.Sleep(time.Second)
	}
	if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "JobId="+id, "StartTime=now"); err != nil {
		t.Fatalf("making gang %s eligible now: %v %s", id, err, out)
	}
	again := waitRestarted(t, lab, id, 4*time.Minute)
	t.Logf("gang %s ran on %v, %s failed, restarted on %v, ExcNodeList %q: %s", id, ran.Nodes, failed, again.Nodes, again.ExcNodes, again.AdminComment)
	if strings.Join(again.Nodes, ",") != "node01,node03,node04" {
		t.Errorf("requeued gang %s restarted on %v; want node01, node03 and the spare node04\n%s", id, again.Nodes, tail(c.output(), 40))
	}
	if !strings.Contains(again.AdminComment, " spares=leaf1 ") || strings.Contains(again.ExcNodes, "node04") {
		t.Errorf("gang %s restarted with decision %q, ExcNodeList %q; want spares=leaf1, node04 allowed", id, again.AdminComment, again.ExcNodes)
	}
}
