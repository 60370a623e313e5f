package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
)

func init() {
	register("DefragHoldEnds", testDefragHoldEnds)
	register("DefragApplyInterrupted", testDefragApplyInterrupted)
	register("DefragControllerKilled", testDefragControllerKilled)
	register("DefragSlowSlurmctld", testDefragSlowSlurmctld)
	register("DefragAuditUnwritable", testDefragAuditUnwritable)
	register("DefragForgedJobName", testDefragForgedJobName)
}

// The defragmentation's faults (issue 22), each on the fragmented lab of
// defrag_test.go with a 32-GPU leaf gang waiting, each recording its row
// of the faults table: a hold that reaches its end, an interrupted `defrag
// apply`, a controller killed in the middle of a plan, a slurmctld that
// stops answering, an audit log that cannot be written, a job named to
// forge its state.

// defragFaultConfig is defragConfig with hold instead of 3m and extra
// lines appended to the defrag: section.
func defragFaultConfig(t *testing.T, hold, extra string) string {
	t.Helper()
	cfg := defragConfig(t)
	data, err := os.ReadFile(cfg)
	must(t, err)
	body := strings.Replace(string(data), "  hold: 3m\n", "  hold: "+hold+"\n", 1) + extra
	must(t, os.WriteFile(cfg, []byte(body), 0o644))
	return cfg
}

// autoPolicy is the defrag: lines that turn the controller's policy on for
// the lab's 32-GPU gangs at once.
const autoPolicy = "  auto:\n    enabled: true\n    min_gpus: 32\n    min_wait: 0s\n"

// endHolds deletes what gangtopo holds when a test ends, so that a test
// that failed leaves the next one a free cluster; a failed test's
// processes' output and slurmctld's log are shown.
func endHolds(t *testing.T, procs ...*process) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("%s:\n%s", p.out, tail(p.output(), 40))
			}
			t.Logf("slurmctld:\n%s", lab.LogTail("slurmctld.log", 40))
		}
		for _, h := range gangtopoHolds(t) {
			_, _ = lab.Run(ctxT(t), 0, "scontrol", "delete", "ReservationName="+h)
		}
	})
}

// startDefragController runs the controller daemon (a cycle a second)
// with cfg, its output in a file of the lab.
func startDefragController(t *testing.T, name, cfg string) *process {
	t.Helper()
	return startGangtopo(t, name, "daemon", "--role", "controller", "--interval", "1s", "--topology", clusterFile,
		"-o", snapshotFile, "--config", cfg)
}

// waitAudit waits until the audit log has a line matching ok (polled every
// 5 ms: the tests stop processes between two changes).
func waitAudit(t *testing.T, limit time.Duration, what string, ok func(auditEntry) bool) auditEntry {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, e := range readAudit(t) {
			if ok(e) {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s in the audit log after %v", what, limit)
	return auditEntry{}
}

func isLine(action, job, result string) func(auditEntry) bool {
	return func(e auditEntry) bool { return e.Action == action && e.Job == job && e.Result == result }
}

// waitNoHolds waits until Slurm lists no reservation of gangtopo's.
func waitNoHolds(t *testing.T, limit time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if len(gangtopoHolds(t)) == 0 {
			return true
		}
		time.Sleep(time.Second)
	}
	return false
}

// waitState waits until job id is in state (squeue), or limit passes; it
// returns the state then.
func waitState(t *testing.T, id, state string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, _, _ := squeueState(t, id)
		if st == state || time.Now().After(deadline) {
			return st
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// restartCounts is each filler's restart count ("name=count ...").
func restartCounts(t *testing.T, jobs map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, id := range jobs {
		out[name] = restarts(t, id)
	}
	return out
}

// requeuedOnce checks that job b alone was requeued, as often as b says
// ("0", "1", or "0|1": at most once).
func requeuedOnce(t *testing.T, jobs map[string]string, b string) faults.Outcome {
	t.Helper()
	got := restartCounts(t, jobs)
	ok := slices.Contains(strings.Split(b, "|"), got["b"]) && got["a1"] == "0" && got["a2"] == "0" && got["c"] == "0" && got["d"] == "0"
	return faults.Check(ok, "restarts %v, want b %s and the others 0", got, b)
}

// fillersAlive checks that no filler was lost: each runs, or waits again
// after its requeue.
func fillersAlive(t *testing.T, jobs map[string]string) faults.Outcome {
	t.Helper()
	for name, id := range jobs {
		st, _, _ := squeueState(t, id)
		// a job requeued a moment ago is COMPLETING while its old run
		// ends (22.05 shows that state alone): it is pending again within
		// seconds, a lost one ends otherwise
		for deadline := time.Now().Add(30 * time.Second); st == "COMPLETING" && time.Now().Before(deadline); {
			time.Sleep(500 * time.Millisecond)
			st, _, _ = squeueState(t, id)
		}
		if st != "RUNNING" && st != "PENDING" {
			return faults.Outcome("filler " + name + " is " + st)
		}
	}
	return "ok"
}

// notHeld checks that a waiting gang is not held by Slurm (priority 0,
// RESV_DEL_HOLD) and sits in no reservation.
func notHeld(t *testing.T, gang string) faults.Outcome {
	t.Helper()
	st, reason, prio := squeueState(t, gang)
	j, err := lab.ShowJob(ctxT(t), gang)
	must(t, err)
	ok := st != "RESV_DEL_HOLD" && prio != "0" && !strings.Contains(reason, "Reservation") && nullable(j.Fields["Reservation"]) == ""
	return faults.Check(ok, "gang %s is %s (%s), priority %s, reservation %q", gang, st, reason, prio, j.Fields["Reservation"])
}

// testDefragHoldEnds: a hold's reservation that reaches its end with
// nobody to end it leaves its gang alone, waiting or running (its flags:
// FLEX, NO_HOLD_JOBS_AFTER_END; with IGNORE_JOBS alone Slurm held the
// waiting gang at priority 0 and ended the running one as TIMEOUT). A
// 30-second hold (a one-minute reservation, whose end the test brings
// forward to 5 s from the moment it checks: endHoldSoon): first `defrag
// apply` killed once the gang is attached, before any requeue, the gang
// waiting in the hold; then a plan carried out with --wait 0 and no
// controller, the gang running in the hold when it ends.
func testDefragHoldEnds(t *testing.T) {
	reset(t)
	cfg := defragFaultConfig(t, "30s", "")
	jobs := fragmented(t)
	gang := pendingGang(t)
	base := []string{"--config", cfg, "--topology", clusterFile, "--yes", "--wait", "0"}
	since := ctldLogSize()

	p := startGangtopo(t, "apply-killed", append([]string{"defrag", "apply", "--job", gang}, base...)...)
	waitAudit(t, 30*time.Second, "attach outcome", isLine("attach", gang, "ok"))
	p.signal(syscall.SIGSTOP) // stopped during its re-check, before it requeues
	p.stop(syscall.SIGKILL)
	inHold(t, gang, jobs)
	endHoldSoon(t, gang)
	ended := waitNoHolds(t, 150*time.Second)
	log := ctldLogSince(since)
	record(t, faults.Row{Fault: "defrag hold reaches its end, gang waiting", NoJobLost: fillersAlive(t, jobs),
		NothingHeldForEver: notHeld(t, gang), NoDoubleRequeue: requeuedOnce(t, jobs, "0"),
		NothingLeft: faults.Check(ended, "hold still there 150 s after it was made"), SnapshotFresh: faults.NA,
		LogLine: lineContaining(log, "JobId="+gang+" linked to defunct reservation")})

	since = ctldLogSize()
	waitReason(t, gang)
	out, code := defragCmd(t, append([]string{"defrag", "apply", "--job", gang}, base...)...)
	if code != 0 {
		t.Fatalf("defrag apply --wait 0: exit %d\n%s", code, out)
	}
	waitRunning(t, gang, 60*time.Second)
	endHoldSoon(t, gang)
	ended = waitNoHolds(t, 150*time.Second)
	time.Sleep(5 * time.Second)
	log = ctldLogSince(since)
	st, reason, _ := squeueState(t, gang)
	record(t, faults.Row{Fault: "defrag hold reaches its end, gang running", NoJobLost: faults.Check(st == "RUNNING" &&
		!strings.Contains(log, "Reservation ended for JobId="+gang), "gang %s is %s (%s)", gang, st, reason),
		NothingHeldForEver: faults.Check(ended, "hold still there"), NoDoubleRequeue: requeuedOnce(t, jobs, "1"),
		NothingLeft: notHeld(t, gang), SnapshotFresh: faults.NA, LogLine: lineContaining(log, "linked to defunct reservation")})
}

// endHoldSoon brings the end of the gang's hold forward to a few seconds
// from now: what is tested is what the hold's end does to the gang, not
// the minute (Slurm's shortest Duration) the hold lasts.
func endHoldSoon(t *testing.T, gang string) {
	t.Helper()
	if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "ReservationName=gangtopo_defrag_"+gang, "EndTime=now+5"); err != nil {
		t.Fatalf("ending hold gangtopo_defrag_%s in 5 s: %v %s", gang, err, out)
	}
}

// record records a fault's row, and fails the test when an outcome is not
// ok (or not applicable) or no log line says what happened.
func record(t *testing.T, r faults.Row) {
	t.Helper()
	faults.Record(r)
	for _, o := range []faults.Outcome{r.NoJobLost, r.NothingHeldForEver, r.NoDoubleRequeue, r.NothingLeft, r.SnapshotFresh} {
		if o != "ok" && o != faults.NA {
			t.Errorf("%s: %s", r.Fault, o)
		}
	}
	if r.LogLine == "" {
		t.Errorf("%s: no log line says what happened", r.Fault)
	}
}

// inHold checks that the gang waits in its hold, nothing requeued yet
// (the process carrying the plan out was stopped after the attach).
func inHold(t *testing.T, gang string, jobs map[string]string) {
	t.Helper()
	j, err := lab.ShowJob(ctxT(t), gang)
	must(t, err)
	if j.State != "PENDING" || j.Fields["Reservation"] != "gangtopo_defrag_"+gang || restarts(t, jobs["b"]) != "0" {
		t.Fatalf("gang %s is %s in reservation %q, job b restarted %s times: want it pending in its hold, nothing requeued",
			gang, j.State, j.Fields["Reservation"], restarts(t, jobs["b"]))
	}
}

// lineContaining is the first line of log holding want ("" when none does).
func lineContaining(log, want string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, want) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// testDefragApplyInterrupted: `defrag apply --yes` interrupted (SIGINT)
// while it waits for the gang, after its requeue: it ends the hold, says
// so and what it requeued, and exits 1.
func testDefragApplyInterrupted(t *testing.T) {
	reset(t)
	cfg := defragFaultConfig(t, "3m", "")
	jobs := fragmented(t)
	gang := pendingGang(t)
	p := startGangtopo(t, "apply-interrupted", "defrag", "apply", "--job", gang, "--config", cfg, "--topology", clusterFile, "--yes")
	waitAudit(t, 30*time.Second, "requeue outcome", isLine("requeue", jobs["b"], "ok"))
	code := p.stop(syscall.SIGINT)
	out := p.output()
	noHolds := len(gangtopoHolds(t)) == 0
	record(t, faults.Row{Fault: "defrag apply --yes interrupted (SIGINT)", NoJobLost: fillersAlive(t, jobs),
		NothingHeldForEver: faults.Check(noHolds && code == 1, "exit %d, holds %v", code, gangtopoHolds(t)),
		NoDoubleRequeue:    requeuedOnce(t, jobs, "1"), NothingLeft: notHeld(t, gang), SnapshotFresh: faults.NA,
		LogLine: p.line("interrupted")})
	if !strings.Contains(out, "the hold is ended") {
		t.Errorf("output does not say the hold is ended:\n%s", out)
	}
}

// testDefragControllerKilled: the controller's policy carries a plan out
// and is killed (SIGKILL) in the middle, then started again: killed
// between the hold and its requeue, the restarted controller ends the
// orphaned hold a minute after it was made and carries the plan out
// again; killed after the requeue, it ends the hold once the gang runs.
// No job is requeued twice. The restarted controller's line says why it
// ended the hold (why): the hold runs out by itself within 3 min too, so
// a gang that started only then would not show the orphan rule works.
func testDefragControllerKilled(t *testing.T) {
	for _, tc := range []struct {
		name, fault, why string
		at               func(gang, victim string) (string, func(auditEntry) bool)
	}{
		{"between", "controller killed between hold and requeues, restarted", "ok (no requeue was recorded for it", func(gang, _ string) (string, func(auditEntry) bool) {
			return "attach outcome", isLine("attach", gang, "ok")
		}},
		{"after", "controller killed after the requeues, restarted", "ok (the gang runs)", func(_, victim string) (string, func(auditEntry) bool) {
			return "requeue outcome", isLine("requeue", victim, "ok")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reset(t)
			cfg := defragFaultConfig(t, "3m", autoPolicy)
			jobs := fragmented(t)
			gang := pendingGang(t)
			c := startDefragController(t, "controller-"+tc.name, cfg)
			what, at := tc.at(gang, jobs["b"])
			waitAudit(t, 60*time.Second, what, at)
			c.stop(syscall.SIGKILL)
			if tc.name == "between" {
				inHold(t, gang, jobs)
			}
			c = startDefragController(t, "controller-"+tc.name+"-restarted", cfg)
			running := waitState(t, gang, "RUNNING", 150*time.Second)
			ended := waitNoHolds(t, 30*time.Second)
			c.stop(syscall.SIGTERM)
			record(t, faults.Row{Fault: tc.fault, NoJobLost: fillersAlive(t, jobs),
				NothingHeldForEver: faults.Check(running == "RUNNING" && ended, "gang %s, holds %v", running, gangtopoHolds(t)),
				NoDoubleRequeue:    requeuedOnce(t, jobs, "1"), NothingLeft: faults.Check(ended, "holds left: %v", gangtopoHolds(t)),
				SnapshotFresh: faults.NA, LogLine: c.line("release hold gangtopo_defrag_" + gang + " of job " + gang + ": " + tc.why)})
		})
	}
}

// testDefragSlowSlurmctld: slurmctld stops answering (SIGSTOP, 6 s, three
// times defrag.timeout) as the controller makes a plan's hold: the command
// runs out of time, the door stops changing Slurm for the round, nothing
// is requeued; the snapshot keeps being published (the poll runs apart
// from the duties) within max_snapshot_age (30 s); once slurmctld answers
// again, a hold made by the late command is ended as an orphan.
func testDefragSlowSlurmctld(t *testing.T) {
	reset(t)
	cfg := defragFaultConfig(t, "3m", autoPolicy)
	must(t, os.WriteFile(cfg, []byte(strings.Replace(readFile(t, cfg), "  timeout: 10s\n", "  timeout: 2s\n", 1)), 0o644))
	jobs := fragmented(t)
	gang := pendingGang(t)
	c := startDefragController(t, "controller-slow", cfg)
	ages := sampleSnapshotAge()
	waitAudit(t, 60*time.Second, "hold intent", isLine("hold", gang, "intent"))
	must(t, syscall.Kill(lab.CtldPID, syscall.SIGSTOP))
	t.Logf("slurmctld (pid %d) stopped at %s", lab.CtldPID, time.Now().Format("15:04:05.000"))
	time.Sleep(6 * time.Second)
	must(t, syscall.Kill(lab.CtldPID, syscall.SIGCONT))
	t.Logf("slurmctld continued at %s", time.Now().Format("15:04:05.000"))
	ended := waitNoHolds(t, 100*time.Second)
	maxAge, times := ages()
	c.stop(syscall.SIGTERM)
	if maxAge >= 30*time.Second {
		t.Logf("snapshots published at %v", times)
	}
	record(t, faults.Row{Fault: "slurmctld stopped 6 s during a plan (defrag.timeout 2s)", NoJobLost: fillersAlive(t, jobs),
		NothingHeldForEver: faults.Check(ended, "holds left: %v", gangtopoHolds(t)), NoDoubleRequeue: requeuedOnce(t, jobs, "0|1"),
		NothingLeft: notHeld(t, gang), SnapshotFresh: faults.Check(maxAge < 30*time.Second, "snapshot %v old", maxAge),
		LogLine: c.line("no answer in time")})
	t.Logf("oldest snapshot seen while slurmctld was stopped: %v", maxAge)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	return string(data)
}

// sampleSnapshotAge reads the published snapshot's time every 250 ms until
// the returned function is called, which returns the largest age seen and
// the snapshot times seen (for a failure's log).
func sampleSnapshotAge() func() (time.Duration, []string) {
	done := make(chan struct{})
	type result struct {
		most  time.Duration
		times []string
	}
	out := make(chan result)
	go func() {
		var r result
		last := time.Time{}
		for {
			var h struct{ Time time.Time }
			if data, err := os.ReadFile(snapshotFile); err == nil && json.Unmarshal(data, &h) == nil && !h.Time.IsZero() {
				r.most = max(r.most, time.Since(h.Time))
				if !h.Time.Equal(last) {
					last = h.Time
					r.times = append(r.times, h.Time.Format("15:04:05.000"))
				}
			}
			select {
			case <-done:
				out <- r
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() (time.Duration, []string) { close(done); r := <-out; return r.most, r.times }
}

// testDefragAuditUnwritable: the audit log on a read-only mount (a unit's
// ReadOnlyPaths, a full or broken disk): `defrag apply --yes` refuses
// before anything (exit 2), the controller makes no change and says why;
// nothing is requeued, no hold is made.
func testDefragAuditUnwritable(t *testing.T) {
	reset(t)
	cfg := defragFaultConfig(t, "3m", autoPolicy)
	endHolds(t)
	jobs := fragmented(t)
	gang := pendingGang(t)
	audit := auditLog(snapshotFile)
	must(t, os.WriteFile(audit, nil, 0o640))
	if out, err := exec.Command("mount", "--bind", audit, audit).CombinedOutput(); err != nil {
		t.Fatalf("bind mount: %v %s", err, out)
	}
	defer exec.Command("umount", audit).Run()
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", audit).CombinedOutput(); err != nil {
		t.Fatalf("read-only remount: %v %s", err, out)
	}
	out, code := defragCmd(t, "defrag", "apply", "--job", gang, "--config", cfg, "--topology", clusterFile, "--yes")
	if code != 2 || !strings.Contains(out, "every change is recorded before it is made") {
		t.Errorf("defrag apply: exit %d, want 2 naming the audit log:\n%s", code, out)
	}
	daemon, err := gangtopo(t, "daemon", "--role", "controller", "--once", "--topology", clusterFile, "-o", snapshotFile, "--config", cfg)
	if err != nil {
		t.Fatalf("controller cycle: %v\n%s", err, daemon)
	}
	line := lineContaining(daemon, "the audit line could not be written")
	record(t, faults.Row{Fault: "audit log read-only", NoJobLost: fillersAlive(t, jobs),
		NothingHeldForEver: faults.Check(len(gangtopoHolds(t)) == 0, "holds %v", gangtopoHolds(t)),
		NoDoubleRequeue:    requeuedOnce(t, jobs, "0"), NothingLeft: notHeld(t, gang), SnapshotFresh: faults.NA, LogLine: line})
	if line == "" {
		t.Errorf("the controller did not say the audit log could not be written:\n%s", daemon)
	}
}

// testDefragForgedJobName: a gang named `x JobState=RUNNING` (text that
// `scontrol -o show job` prints before the job's real state) is read as
// the pending job it is: why says so, defrag apply makes room for it and
// keeps the hold until the gang really runs.
func testDefragForgedJobName(t *testing.T) {
	reset(t)
	cfg := defragFaultConfig(t, "3m", "")
	endHolds(t)
	jobs := fragmented(t)
	id := submit(t, "-J", "x JobState=RUNNING", "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	waitReason(t, id)
	why, err := gangtopo(t, "why", id)
	if err != nil || !strings.Contains(why, "job "+id+": PENDING") {
		t.Errorf("why: %v, want PENDING:\n%s", err, why)
	}
	out, code := defragCmd(t, "defrag", "apply", "--job", id, "--config", cfg, "--topology", clusterFile, "--yes", "--wait", "90s")
	st, _, _ := squeueState(t, id)
	var release, start string
	for _, e := range readAudit(t) {
		if e.Action == "release" && e.Gang == id && e.Result == "ok" {
			release = e.Time.UTC().Format(time.RFC3339)
		}
	}
	s, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-j", id, "-o", "%S")
	must(t, err)
	if at, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.Local); err == nil {
		start = at.UTC().Format(time.RFC3339)
	}
	record(t, faults.Row{Fault: "gang named 'x JobState=RUNNING'", NoJobLost: fillersAlive(t, jobs),
		NothingHeldForEver: faults.Check(code == 0 && st == "RUNNING" && release >= start && start != "",
			"exit %d, gang %s, started %s, hold released %s", code, st, start, release),
		NoDoubleRequeue: requeuedOnce(t, jobs, "1"), NothingLeft: faults.Check(len(gangtopoHolds(t)) == 0, "holds %v", gangtopoHolds(t)),
		SnapshotFresh: faults.NA, LogLine: lineContaining(out, "runs; the hold is ended")})
}
