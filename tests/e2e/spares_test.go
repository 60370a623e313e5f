package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("SpareReplacesFailedNode", func(t *testing.T) { spareReplacesFailedNode(t, byHand) })
	register("SpareRestartsAtOnce", func(t *testing.T) { spareReplacesFailedNode(t, atOnce) })
	register("StoppedControllerRestartsAtOnceLater", func(t *testing.T) { spareReplacesFailedNode(t, atOnceStopped) })
	register("LentSpareTakenBack", testLentSpareTakenBack)
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
//
// The check that the spares stay free (sparesStayFree) runs with byHand
// alone. How the gang is made eligible (mode): byHand, the test does it once the
// gang is re-bound (StartTime=now, as an administrator would), rather than
// wait out Slurm's two-minute requeue delay. atOnce
// (SpareRestartsAtOnce: gangtopo.yaml rebind.restart_at_once), the
// controller does, after its re-binding: the gang must run again within
// 30 s of the failure, on its old node01 and node03 and the spare
// (Slurm's delay alone would be 121 s), with the controller's expedite in
// the audit log. atOnceStopped, a fault: the controller is stopped
// (SIGSTOP) when the node fails and resumed 20 s later, a poll's memory
// from before the failure in hand: it must catch up, re-bind the gang and
// make it eligible once, and the gang restart on the spare within 90 s
// of the failure (where the stop caught a round decides how long it
// takes), before Slurm's own delay would have let it.
type restartMode int

const (
	byHand restartMode = iota
	atOnce
	atOnceStopped
)

func spareReplacesFailedNode(t *testing.T, mode restartMode) {
	reset(t)
	defer lab.CancelAll(context.Background())
	conf := labSpares
	if mode != byHand {
		conf += "rebind:\n  restart_at_once: true\n"
	}
	writeConfig(t, conf)
	t.Cleanup(func() { writeConfig(t, labConfig) })
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(conf, clusterFile, snap)), 0o644))
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

	if mode == byHand {
		sparesStayFree(t, spares)
	}
	// node06/07, node10/11, node14/15 stay busy: no leaf has three free
	// nodes outside its spare
	fill(t, whole("node06", "node10", "node14"))

	failed := "node02"
	t.Cleanup(func() {
		_, _ = lab.Run(context.Background(), 0, "scontrol", "update", "NodeName="+failed, "State=RESUME")
	})
	time.Sleep(3 * time.Second) // the controller has seen the gang running on its nodes
	if mode == atOnceStopped {
		c.signal(syscall.SIGSTOP)
		defer c.signal(syscall.SIGCONT)
	}
	at := time.Now()
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	if mode != byHand {
		restartedAtOnce(t, c, mode, id, snap, failed, ran, at)
		return
	}
	deadline := time.Now().Add(time.Minute)
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

// testLentSpareTakenBack: issue 26's spares lent meanwhile. On a lab with
// Slurm's partition-priority preemption (preemptLab: high over low,
// PreemptMode=REQUEUE), one spare a leaf, lent to jobs of partition low of
// at most 2 GPUs. A 24-GPU leaf:required gang in high runs on node01-03;
// a 2-GPU job of low runs on leaf1's spare node04; every other leaf has
// two nodes busy with jobs of high. One of the gang's nodes fails: no leaf
// has three free nodes, and the spare is taken. The controller counts the
// lent job as gone and re-binds the gang to leaf1 alone, node04 allowed
// (26.05 does not preempt for it bound to several leaves); Slurm preempts
// the lent job (requeued) and the gang restarts on node01, node03 and
// node04. gangtopo itself requeues nothing: the lent job's requeue is
// Slurm's, because low is preemptable.
func testLentSpareTakenBack(t *testing.T) {
	l, cf, snap := preemptLab(t, "spares:\n  tier: leaf\n  per_domain: 1\n  lend_partitions: [low]\n  lend_max_gpus: 2\n")
	defer func() {
		if t.Failed() {
			t.Logf("slurmctld's log:\n%s", l.LogTail("slurmctld.log", 80))
		}
		l.Stop()
	}()
	dir := filepath.Dir(snap)
	c := startGangtopoIn(t, l, dir, "controller", "daemon", "--role", "controller", "--interval", "1s", "--log-format", "json", "--log-level", "debug",
		"--topology", cf, "-o", snap, "--config", filepath.Join(dir, "gangtopo.yaml"))
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)
	sub := func(args ...string) string {
		id, err := l.Submit(context.Background(), nil, append(append([]string{"-o", "/dev/null"}, args...), "--wrap", "sleep 100000")...)
		must(t, err)
		return id
	}
	var high []string
	for _, n := range []string{"node05", "node09", "node13"} {
		high = append(high, sub("-p", "high", "-w", n, "--gpus=8", "--cpus-per-gpu=1"))
	}
	for _, id := range high {
		waitRunningIn(t, l, id)
	}
	time.Sleep(3 * time.Second) // published
	gang := sub("-p", "high", "--gpus=24", "--cpus-per-gpu=1", "--gang-topology=leaf:required", "--requeue")
	ran := waitRunningIn(t, l, gang)
	if strings.Join(ran.Nodes, ",") != "node01,node02,node03" {
		t.Fatalf("gang %s runs on %v; want node01-03, the spare node04 excluded (%s)", gang, ran.Nodes, ran.AdminComment)
	}
	lent := sub("-p", "low", "-w", "node04", "--gpus=2", "--cpus-per-gpu=1", "--requeue")
	waitRunningIn(t, l, lent)
	for _, n := range []string{"node06", "node10", "node14"} {
		high = append(high, sub("-p", "high", "-w", n, "--gpus=8", "--cpus-per-gpu=1"))
	}
	for _, id := range high[3:] {
		waitRunningIn(t, l, id)
	}

	failed := "node02"
	time.Sleep(3 * time.Second) // the controller has seen the gang running on its nodes
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := l.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for c.line("re-bound a gang requeued after a node failure") == "" {
		if time.Now().After(deadline) {
			show, _ := l.Run(ctxT(t), 0, "scontrol", "show", "job", gang)
			t.Fatalf("the controller did not re-bind gang %s within a minute of %s going down:\n%s\ncontroller:\n%s", gang, failed, show, tail(c.output(), 40))
		}
		time.Sleep(time.Second)
	}
	if line := c.line("re-bound a gang requeued after a node failure"); !strings.Contains(line, `"reclaims":["`+lent+`"]`) {
		t.Errorf("the re-binding does not name lent job %s as taken back:\n%s", lent, line)
	}
	if out, err := l.Run(ctxT(t), 0, "scontrol", "update", "JobId="+gang, "StartTime=now"); err != nil {
		t.Fatalf("making gang %s eligible now: %v %s", gang, err, out)
	}
	again := waitRestarted(t, l, gang, 90*time.Second)
	t.Logf("Slurm %s: gang %s ran on %v, %s failed, restarted on %v: %s", l.Release, gang, ran.Nodes, failed, again.Nodes, again.AdminComment)
	if strings.Join(again.Nodes, ",") != "node01,node03,node04" || !strings.HasPrefix(again.AdminComment, "gangtopo v1 placed ") || again.Features != "gt_leaf1" {
		t.Errorf("requeued gang %s restarted on %v, features %q, decision %q; want node01, node03 and the spare node04, placed there, bound to leaf1 alone\n%s",
			gang, again.Nodes, again.Features, again.AdminComment, tail(c.output(), 40))
	}
	j, err := l.ShowJob(ctxT(t), lent)
	must(t, err)
	if j.Fields["Restarts"] != "1" || j.State == "RUNNING" {
		t.Errorf("lent job %s: %s, %s restarts; want requeued by Slurm's preemption once, not running", lent, j.State, j.Fields["Restarts"])
	}
	for _, id := range high {
		if j, err := l.ShowJob(ctxT(t), id); err != nil || j.State != "RUNNING" || j.Fields["Restarts"] != "0" {
			t.Errorf("job %s of high: %+v, %v; want running, never requeued", id, j, err)
		}
	}
	if audit, _ := os.ReadFile(auditLog(snap)); strings.Contains(string(audit), `"action":"requeue"`) {
		t.Errorf("gangtopo requeued a job itself:\n%s", audit)
	}
}

// restartedAtOnce checks spareReplacesFailedNode's gang made eligible by
// the controller (mode atOnce or atOnceStopped), node failed at at.
func restartedAtOnce(t *testing.T, c *process, mode restartMode, id, snap, failed string, ran *slurmlab.Job, at time.Time) {
	t.Helper()
	within := 30 * time.Second
	if mode == atOnceStopped {
		time.Sleep(time.Until(at.Add(20 * time.Second)))
		if j, err := lab.ShowJob(ctxT(t), id); err != nil || j.State == "RUNNING" {
			t.Fatalf("gang %s %v while the controller was stopped (%v); want pending, in Slurm's requeue delay", id, j, err)
		}
		c.signal(syscall.SIGCONT)
		within = 90 * time.Second // well inside Slurm's own 121 s: where the stop caught a round decides how long it takes
	}
	again := waitRestarted(t, lab, id, within)
	took := time.Since(at)
	t.Logf("Slurm %s: gang %s ran on %v, %s failed, restarted on %v %.1f s later: %s", lab.Release, id, ran.Nodes, failed, again.Nodes, took.Seconds(), again.AdminComment)
	audit, err := os.ReadFile(auditLog(snap))
	must(t, err)
	expedites := strings.Count(string(audit), `"action":"expedite","job":"`+id+`","result":"intent"`)
	if mode == atOnce {
		if took > within || strings.Join(again.Nodes, ",") != "node01,node03,node04" || expedites != 1 || !strings.Contains(c.output(), "may start at once") {
			t.Errorf("gang %s restarted on %v %.1f s after the failure, %d expedite(s) in the audit log; want node01, node03 and the spare node04 within %s, one expedite\n%s\n%s",
				id, again.Nodes, took.Seconds(), expedites, within, audit, tail(c.output(), 40))
		}
		return
	}
	for _, l := range strings.Split(c.output(), "\n") {
		if strings.Contains(l, `"job":"`+id+`"`) || strings.Contains(l, "duty round") && strings.Contains(l, `"changes":`) && !strings.Contains(l, `"changes":0`) {
			t.Logf("controller: %s", l)
		}
	}
	time.Sleep(3 * time.Second) // a cycle after the restart: nothing more
	audit, err = os.ReadFile(auditLog(snap))
	must(t, err)
	expedites = strings.Count(string(audit), `"action":"expedite","job":"`+id+`","result":"intent"`)
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	line := firstLine(c.output(), "may start at once")
	record(t, faults.Row{Fault: "controller stopped when a gang's node fails (rebind.restart_at_once)",
		NoJobLost: faults.Check(j.State == "RUNNING" && strings.Join(again.Nodes, ",") == "node01,node03,node04",
			"gang %s %s on %v, want running on node01, node03 and the spare node04", id, j.State, again.Nodes),
		NothingHeldForEver: faults.Check(took <= within, "restarted %.1f s after the failure, want within %s", took.Seconds(), within),
		NoDoubleRequeue:    faults.Check(j.Fields["Restarts"] == "1" && expedites == 1, "restarts %s, %d expedite(s); want 1 and 1", j.Fields["Restarts"], expedites),
		NothingLeft:        faults.NA, SnapshotFresh: faults.NA, LogLine: line})
}

// sparesStayFree: with every node but the spares and the gang's free, of
// seven whole-node jobs six run and one pends rather than take a spare;
// they are cancelled again.
func sparesStayFree(t *testing.T, spares []string) {
	t.Helper()
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
	// the fillers below are pinned to nodes these jobs held: one still
	// completing would leave them pending (Resources), which settle takes
	// as their outcome on a loaded machine
	for _, m := range more {
		cancelAndWait(t, m)
	}
}
