package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func init() {
	register("DefragApply", testDefragApply)
}

// defragConfig is the e2e gangtopo.yaml with a defrag: section: jobs of
// the debug partition may be requeued (the lab's fillers run there: gangtopo
// leaves them to Slurm, so a requeued one may restart anywhere), every
// action goes to the lab's audit log, a hold lasts at most 3 minutes.
func defragConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(filepath.Dir(configFile), "gangtopo-defrag.yaml")
	audit := auditLog(snapshotFile)
	body := fmt.Sprintf(labConfig, clusterFile, snapshotFile) + `defrag:
  partitions: [debug]
  hold: 3m
  requeue_window: 1h
  timeout: 10s
`
	must(t, os.WriteFile(path, []byte(body), 0o644))
	_ = os.Remove(audit)
	return path
}

// fragmented makes every leaf hold small jobs, so that no leaf is whole:
// two requeueable 1-GPU jobs on node02 (leaf1), one on node06 (leaf2), one
// that may not be requeued (--no-requeue) on node10 (leaf3), and one in
// the cpu partition, outside defrag.partitions, on node14 (leaf4). Each is
// placed by Slurm alone (partition debug, which gangtopo leaves as
// submitted) while 8-GPU blockers fill every other node; the blockers are
// cancelled at the end. It returns the jobs by name.
func fragmented(t *testing.T) map[string]string {
	t.Helper()
	blockers := map[string][]string{}
	block := func(node string, gpus int) {
		blockers[node] = append(blockers[node], submit(t, "-w", node, "--gpus="+itoa(gpus), "--cpus-per-gpu=1", "-p", "debug"))
	}
	unblock := func(node string) {
		for _, id := range blockers[node] {
			_, err := lab.Run(ctxT(t), 0, "scancel", id)
			must(t, err)
			waitGone(t, id, 30*time.Second)
		}
		delete(blockers, node)
	}
	for i := 1; i <= 16; i++ {
		if n := fmt.Sprintf("node%02d", i); n != "node02" {
			block(n, 8)
		}
	}
	jobs := map[string]string{}
	place := func(name, node string, args ...string) {
		id := submit(t, append([]string{"--gpus=1", "--cpus-per-gpu=1"}, args...)...)
		if j := waitRunning(t, id, 30*time.Second); strings.Join(j.Nodes, ",") != node {
			t.Fatalf("filler %s (%s) runs on %v, want %s", name, id, j.Nodes, node)
		}
		jobs[name] = id
	}
	place("a1", "node02", "-p", "debug")
	place("a2", "node02", "-p", "debug")
	block("node02", 6)
	unblock("node06")
	place("b", "node06", "-p", "debug")
	block("node06", 7)
	unblock("node10")
	place("c", "node10", "-p", "debug", "--no-requeue")
	block("node10", 7)
	unblock("node14")
	place("d", "node14", "-p", "cpu")
	for node := range blockers {
		unblock(node)
	}
	publish(t)
	return jobs
}

// defragCmd runs gangtopo defrag ... with the defrag configuration and
// returns its output and exit status.
func defragCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := gangtopo(t, args...)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case errors.As(err, &ee):
		return out, ee.ExitCode()
	}
	t.Fatalf("gangtopo %s: %v", strings.Join(args, " "), err)
	return "", 0
}

// restarts is Slurm's restart count of a job.
func restarts(t *testing.T, id string) string {
	t.Helper()
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	return j.Fields["Restarts"]
}

// gangtopoHolds lists gangtopo's reservations.
func gangtopoHolds(t *testing.T) []string {
	t.Helper()
	out, err := lab.Run(ctxT(t), 0, "scontrol", "-o", "show", "reservation")
	must(t, err)
	var names []string
	for _, f := range strings.Fields(out) {
		if name, ok := strings.CutPrefix(f, "ReservationName="); ok && strings.HasPrefix(name, "gangtopo_defrag_") {
			names = append(names, name)
		}
	}
	return names
}

// pendingGang submits a 32-GPU leaf gang, which cannot start on the
// fragmented cluster, and checks gangtopo bound it, waiting.
func pendingGang(t *testing.T) string {
	t.Helper()
	id := submit(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	j := settle(t, id)
	if j.State != "PENDING" || !strings.HasPrefix(j.AdminComment, "gangtopo v1 waiting") {
		t.Fatalf("gang %s is %s (%s), decision %q; want PENDING and waiting", id, j.State, j.Reason, j.AdminComment)
	}
	return id
}

// testDefragApply: on a fragmented cluster a 4-node leaf gang waits. The
// dry run changes nothing; a saved plan made stale by a job started in its
// domain is refused (exit 1, no reservation left, nothing requeued);
// --yes requeues exactly the job the plan names (leaf2's), the gang starts
// inside leaf2, the requeued job runs again elsewhere, the job that may not
// be requeued and the job outside defrag.partitions keep 0 restarts, and
// the hold is gone afterwards while the gang still runs.
func testDefragApply(t *testing.T) {
	reset(t)
	cfg := defragConfig(t)
	jobs := fragmented(t)
	gang := pendingGang(t)
	base := []string{"--config", cfg, "--topology", clusterFile}

	// the documented lines (tests/docs.Registry: docs/defrag.md and
	// README), the lab's gang for 1234, its configuration added
	doc := newDocLines(t, "DefragApply", "1234", gang)
	defer doc.check()
	out, code := defragCmd(t, append(doc.args("gangtopo defrag apply --job 1234"), base...)...)
	if code != 0 || !strings.Contains(out, "in leaf leaf2: requeue 1 job(s)") || !strings.Contains(out, "requeue job "+jobs["b"]) ||
		!strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("dry run: exit %d, want 0 and a plan requeuing job b (%s) in leaf2:\n%s", code, jobs["b"], out)
	}
	if r := restarts(t, jobs["b"]); r != "0" || len(gangtopoHolds(t)) != 0 {
		t.Fatalf("after the dry run job b has %s restarts and holds %v exist; want nothing changed", r, gangtopoHolds(t))
	}

	// a saved plan, made stale by a job that starts in leaf2
	plan := filepath.Join(filepath.Dir(snapshotFile), "plan.json")
	doc.set("/tmp/plan-1234.json", plan)
	out, code = defragCmd(t, append(doc.args("gangtopo defrag --job 1234 --save /tmp/plan-1234.json"), base...)...)
	if code != 0 || !strings.Contains(out, "plan saved to") {
		t.Fatalf("defrag --save: exit %d\n%s", code, out)
	}
	// (the gang is held meanwhile: Slurm's backfill keeps leaf2 for it)
	_, err := lab.Run(ctxT(t), 0, "scontrol", "hold", gang)
	must(t, err)
	intruder := running(t, "-w", "node07", "--gpus=1", "--cpus-per-gpu=1", "-p", "debug")
	_, err = lab.Run(ctxT(t), 0, "scontrol", "release", gang)
	must(t, err)
	waitReason(t, gang) // released, it waits again for a reason a plan can fix
	out, code = defragCmd(t, append(doc.args("gangtopo defrag apply --plan /tmp/plan-1234.json --yes"), base...)...)
	if code != 1 || !strings.Contains(out, "the saved plan is stale") || !strings.Contains(out, "job "+intruder.ID+" (on node07) would have to be requeued too") {
		t.Fatalf("stale plan: exit %d, want 1 naming job %s:\n%s", code, intruder.ID, out)
	}
	if r := restarts(t, jobs["b"]); r != "0" || len(gangtopoHolds(t)) != 0 {
		t.Fatalf("after the stale plan job b has %s restarts, holds %v; want nothing changed", r, gangtopoHolds(t))
	}
	_, err = lab.Run(ctxT(t), 0, "scancel", intruder.ID)
	must(t, err)
	waitIdle(t, "node07")
	publish(t)

	out, code = defragCmd(t, append(doc.args("gangtopo defrag apply --job 1234 --yes"), append(base, "--wait", "90s")...)...)
	if code != 0 || !strings.Contains(out, "requeued 1 job(s)") || !strings.Contains(out, "the hold is ended") {
		t.Fatalf("defrag apply --yes: exit %d\n%s\nslurmctld:\n%s", code, out, lab.LogTail("slurmctld.log", 30))
	}
	t.Logf("gangtopo defrag apply --job %s --yes:\n%s", gang, out)
	g, err := lab.ShowJob(ctxT(t), gang)
	must(t, err)
	if g.State != "RUNNING" || !slices.Equal(leavesOf(t, g), []string{"leaf2"}) || len(g.Nodes) != 4 {
		t.Errorf("gang %s is %s on %v, want RUNNING on the 4 nodes of leaf2", gang, g.State, g.Nodes)
	}
	// README's why, on the gang the plan started
	if out, err := gangtopo(t, append(doc.args("gangtopo why 1234"), base...)...); err != nil || !strings.Contains(out, "job "+gang+": RUNNING") {
		t.Errorf("gangtopo why %s: %v\n%s", gang, err, out)
	}
	if r := restarts(t, jobs["b"]); r != "1" {
		t.Errorf("job b (%s) has %s restarts, want 1 (requeued once)", jobs["b"], r)
	}
	for _, name := range []string{"a1", "a2", "c", "d"} {
		if r := restarts(t, jobs[name]); r != "0" {
			t.Errorf("job %s (%s) has %s restarts, want 0: the plan did not name it", name, jobs[name], r)
		}
	}
	b := waitRunning(t, jobs["b"], 60*time.Second)
	if slices.Contains(leavesOf(t, b), "leaf2") {
		t.Errorf("requeued job b runs on %v, inside the gang's leaf", b.Nodes)
	}
	time.Sleep(3 * time.Second)
	if holds := gangtopoHolds(t); len(holds) != 0 {
		t.Errorf("holds left after the gang started: %v", holds)
	}
	if g, err := lab.ShowJob(ctxT(t), gang); err != nil || g.State != "RUNNING" || nullable(g.Fields["Reservation"]) != "" {
		t.Errorf("gang after the hold ended: %v %s, reservation %q; want RUNNING outside any reservation", err, g.State, g.Fields["Reservation"])
	}
	checkAudit(t, gang, jobs["b"])
}

func nullable(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}

// checkAudit reads the audit log: an intent line, then an outcome line,
// for each change of the plan, in order.
func checkAudit(t *testing.T, gang, victim string) {
	t.Helper()
	var got []string
	for _, e := range readAudit(t) {
		got = append(got, e.Action+" "+e.Job+" "+e.Result)
	}
	var want []string
	for _, c := range []string{"hold " + gang, "attach " + gang, "requeue " + victim, "expedite " + victim, "detach " + gang, "release "} {
		want = append(want, c+" intent", c+" ok")
	}
	if !slices.Equal(want, got) {
		t.Errorf("audit log: got %q, want %q", got, want)
	}
}

// auditEntry is what the tests read of an audit line.
type auditEntry struct {
	Time                                           time.Time
	Action, Job, Gang, Result, Reason, Reservation string
}

// readAudit reads the lab's audit log (none: no entries).
func readAudit(t *testing.T) []auditEntry {
	t.Helper()
	data, err := os.ReadFile(auditLog(snapshotFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	must(t, err)
	var out []auditEntry
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e auditEntry
		must(t, json.Unmarshal([]byte(line), &e))
		out = append(out, e)
	}
	return out
}

// waitReason waits until Slurm says why a pending job waits (a job just
// released or updated reads None until its next scheduling pass).
func waitReason(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st, reason, _ := squeueState(t, id); st != "PENDING" || reason != "None" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s still pending for reason None after 30 s", id)
}

// squeueState is a job's state, reason and priority as squeue prints them
// (its own fields: a job's name cannot shift them).
func squeueState(t *testing.T, id string) (state, reason, priority string) {
	t.Helper()
	out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T|%r|%Q")
	must(t, err)
	f := strings.Split(strings.TrimSpace(out), "|")
	if len(f) != 3 {
		return "", "", ""
	}
	return f[0], f[1], f[2]
}
