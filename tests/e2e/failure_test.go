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
	register("BlockGangRestartsInItsRack", testBlockGangRestartsInItsRack)
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
	again := waitRestarted(t, lab, id, 4*time.Minute)
	leaves := leavesOf(t, again)
	if len(leaves) != 1 || leaves[0] != old[0] || slices.Contains(again.Nodes, failed) {
		t.Errorf("requeued gang %s restarted on %v (%v); want inside %s, off %s\n%s", id, again.Nodes, leaves, old[0], failed, c.output())
	}
	if !strings.HasPrefix(again.Features, "[gt_"+old[0]+"|") {
		t.Errorf("gang %s restarted with Features %q; want %s first", id, again.Features, old[0])
	}
}

// testBlockGangRestartsInItsRack: issue 26's "on the block lab inside one
// block", the same sequence on the GB200-like lab (topology/block, racks of
// 4 trays of 4 GPUs): an 8-GPU block:required gang (2 trays) is bound at
// submit to the racks, rack1 first; rack1 is full when it is released, so
// Slurm starts it in another rack, R. rack1 frees; one of the gang's trays
// is set down and drained, Slurm requeues the gang. Left alone it would
// restart in rack1; the controller re-binds it with R first (R keeps two
// healthy free trays and the gang's other one), and it restarts inside R,
// off the failed tray, in one segment.
func testBlockGangRestartsInItsRack(t *testing.T) {
	blockSeriesOK(t)
	l, cf, snap := blockLab(t)
	defer l.Stop()
	b := blockRun{t, l, cf, snap}
	cfg := filepath.Join(filepath.Dir(cf), "gangtopo.yaml") // blockLab's
	c := startGangtopoIn(t, l, filepath.Dir(cf), "failures", "daemon", "--role", "controller", "--interval", "1s", "--log-format", "json",
		"--log-level", "debug", "--topology", cf, "-o", snap, "--config", cfg)
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)

	id := b.submit("--hold", "--gpus=8", "--cpus-per-gpu=1", "--gang-topology=block:required", "--requeue")
	j := b.settle(id)
	if !strings.HasPrefix(j.Features, "[gt_rack1|") {
		t.Fatalf("gang %s bound to %q; want the racks, rack1 first", id, j.Features)
	}
	var fillers []string
	for _, n := range []string{"gb01", "gb02", "gb03", "gb04"} {
		fillers = append(fillers, b.submit("-w", n, "--gpus=4", "--cpus-per-gpu=1"))
	}
	for _, f := range fillers {
		waitRunningIn(t, l, f)
	}
	if _, err := l.Run(context.Background(), 0, "scontrol", "release", id); err != nil {
		t.Fatal(err)
	}
	ran := waitRunningIn(t, l, id)
	old := b.racks(ran)
	var rack string
	for r := range old {
		rack = r
	}
	if len(old) != 1 || rack == "rack1" {
		t.Fatalf("gang %s runs on %v (%v); want one rack other than the full rack1", id, ran.Nodes, old)
	}
	for _, f := range fillers {
		if _, err := l.Run(context.Background(), 0, "scancel", f); err != nil {
			t.Fatal(err)
		}
	}
	failed := ran.Nodes[0]
	t.Cleanup(func() {
		_, _ = l.Run(context.Background(), 0, "scontrol", "update", "NodeName="+failed, "State=RESUME")
	})
	time.Sleep(3 * time.Second) // the controller has seen it running on its trays, and rack1 idle
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := l.Run(context.Background(), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(c.output(), "re-bound a gang requeued after a node failure") {
		if time.Now().After(deadline) {
			show, _ := l.Run(context.Background(), 0, "scontrol", "show", "job", id)
			t.Fatalf("the controller did not re-bind gang %s within a minute of %s going down:\n%s\ncontroller:\n%s", id, failed, show, tail(c.output(), 40))
		}
		time.Sleep(time.Second)
	}
	if out, err := l.Run(context.Background(), 0, "scontrol", "update", "JobId="+id, "StartTime=now"); err != nil {
		t.Fatalf("making gang %s eligible now: %v %s", id, err, out)
	}
	again := waitRestarted(t, l, id, 4*time.Minute)
	racks := b.racks(again)
	t.Logf("Slurm %s: gang %s ran on %v (%s), %s failed, restarted on %v (%v), bound %s", l.Release, id, ran.Nodes, rack, failed, again.Nodes, racks, again.Features)
	if len(racks) != 1 || racks[rack] != 2 || slices.Contains(again.Nodes, failed) {
		t.Errorf("requeued gang %s restarted on %v (%v); want 2 trays inside %s, off %s\n%s", id, again.Nodes, racks, rack, failed, tail(c.output(), 40))
	}
	if !strings.HasPrefix(again.Features, "[gt_"+rack+"|") {
		t.Errorf("gang %s restarted with Features %q; want %s first", id, again.Features, rack)
	}
}

// waitRestarted waits until a requeued job of lab l runs again (its
// restart count above 0).
func waitRestarted(t *testing.T, l *slurmlab.Lab, id string, limit time.Duration) *slurmlab.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, err := l.Run(ctxT(t), 0, "scontrol", "-o", "show", "job", id)
		must(t, err)
		if strings.Contains(out, " JobState=RUNNING ") && !strings.Contains(out, " Restarts=0 ") {
			j, err := l.ShowJob(ctxT(t), id)
			must(t, err)
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not running again after %v: %s", id, limit, out)
		}
		time.Sleep(time.Second)
	}
}
