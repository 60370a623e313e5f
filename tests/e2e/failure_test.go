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

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("RequeuedGangRestartsInItsLeaf", testRequeuedGangRestartsInItsLeaf)
}

// testRequeuedGangRestartsInItsLeaf: issue 26, "a node under a running
// leaf gang set DOWN; the requeued gang restarts inside one leaf". A
// 16-GPU leaf:required gang is bound at submit to the four leaves, leaf1
// first; leaf1 fills before it is released, so Slurm starts it in another
// leaf, L. leaf1 frees again; one of the gang's nodes is set DOWN (`scontrol
// update State=DOWN`, then drained so that it stays out), and Slurm
// requeues it (begin time two minutes on).
// Left alone it would restart in leaf1, the first of its binding with room;
// the controller daemon, running all along, re-binds it during the wait
// with L first (two healthy nodes of L are free), and it restarts inside
// L, off the down node. Once it is re-bound the test makes it eligible at
// once (StartTime=now) rather than waiting out the two minutes.
func testRequeuedGangRestartsInItsLeaf(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, clusterFile, snap)), 0o644))
	c := startController(t, "failures", cfg, snap, "--log-level", "debug")
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)

	id := submit(t, "--hold", "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf:required", "--requeue")
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	if !strings.HasPrefix(j.Features, "[gt_leaf1|") {
		t.Fatalf("gang %s bound to %q; want the leaves, leaf1 first", id, j.Features)
	}
	fill(t, whole("node01", "node02", "node03", "node04"))
	if _, err := lab.Run(ctxT(t), 0, "scontrol", "release", id); err != nil {
		t.Fatal(err)
	}
	ran := waitRunning(t, id, 30*time.Second)
	old := leavesOf(t, ran)
	if len(old) != 1 || old[0] == "leaf1" {
		t.Fatalf("gang %s runs in %v; want one leaf other than the full leaf1", id, old)
	}
	for _, n := range []string{"node01", "node02", "node03", "node04"} {
		cancelOn(t, n)
	}
	waitIdle(t, "node04")

	failed := ran.Nodes[0]
	t.Cleanup(func() {
		_, _ = lab.Run(context.Background(), 0, "scontrol", "update", "NodeName="+failed, "State=RESUME")
	})
	time.Sleep(3 * time.Second) // the controller has seen it running on its nodes
	// DOWN kills and requeues the gang; the lab's ReturnToService=2 would
	// take the node back at its slurmd's next registration (its slurmd
	// did not fail), so it is drained too: out of service until resumed,
	// as a failed node stays until it is repaired
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(c.output(), "re-bound a gang requeued after a node failure") {
		if time.Now().After(deadline) {
			show, _ := lab.Run(ctxT(t), 0, "scontrol", "show", "job", id)
			var lines []string
			for _, l := range strings.Split(c.output(), "\n") {
				if !strings.Contains(l, "snapshot published") {
					lines = append(lines, l)
				}
			}
			t.Fatalf("the controller did not re-bind gang %s within a minute of %s going down:\n%s\ncontroller:\n%s", id, failed, show, strings.Join(lines, "\n"))
		}
		time.Sleep(time.Second)
	}
	// what is tested is the binding the gang restarts with, not Slurm's
	// wait after a requeue (a begin time two minutes on): the gang is made
	// eligible now, as an administrator would
	if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "JobId="+id, "StartTime=now"); err != nil {
		t.Fatalf("making gang %s eligible now: %v %s", id, err, out)
	}
	again := waitRestarted(t, id, 4*time.Minute)
	leaves := leavesOf(t, again)
	if len(leaves) != 1 || leaves[0] != old[0] || slices.Contains(again.Nodes, failed) {
		t.Errorf("requeued gang %s restarted on %v (%v); want inside %s, off %s\n%s", id, again.Nodes, leaves, old[0], failed, c.output())
	}
	if !strings.HasPrefix(again.Features, "[gt_"+old[0]+"|") {
		t.Errorf("gang %s restarted with Features %q; want %s first", id, again.Features, old[0])
	}
}

// waitRestarted waits until a requeued job runs again (its restart count
// above 0).
func waitRestarted(t *testing.T, id string, limit time.Duration) *slurmlab.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, err := lab.Run(ctxT(t), 0, "scontrol", "-o", "show", "job", id)
		must(t, err)
		if strings.Contains(out, " JobState=RUNNING ") && !strings.Contains(out, " Restarts=0 ") {
			j, err := lab.ShowJob(ctxT(t), id)
			must(t, err)
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running again after %v: %s", id, limit, out)
		}
		time.Sleep(time.Second)
	}
}
