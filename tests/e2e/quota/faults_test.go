package quota

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// Faults and misuse of the quotas on the lab (issue 22): each records its
// row in the faults table.

// clean cancels every job and waits for the nodes.
func clean(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := lab.CancelAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitNodesIdle(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// fillOwn starts teamb's share: 8 whole nodes in its own QOS.
func fillOwn(t *testing.T) []string {
	t.Helper()
	var own []string
	for range 8 {
		own = append(own, submit(t, "teamb", "gt-teamb", 1))
	}
	for _, id := range own {
		waitFor(t, id, 60*time.Second, "running", func(j *slurmlab.Job) bool { return j.State == "RUNNING" })
	}
	return own
}

// TestUserCannotUseReclaimQOS: a member of teama names the reclaim QOS
// (or the borrow QOS) at submission, or moves their own pending job there:
// Slurm refuses each (no association lists them after sync), and nothing
// changes.
func TestUserCannotUseReclaimQOS(t *testing.T) {
	ctx := context.Background()
	syncQuota(t)
	before := dump(t)
	var refusals []string
	for _, qos := range []string{"gt-reclaim", "gt-borrow"} {
		out, err := lab.RunAs(ctx, nobody, nobody, "sbatch", "-A", "teama", "--qos", qos, "-N", "1", "--gpus-per-node", "8",
			"--exclusive", "-o", "/dev/null", "--wrap", "sleep 1000")
		if err == nil {
			t.Errorf("nobody's sbatch --qos=%s was accepted: %s", qos, out)
		}
		refusals = append(refusals, fmt.Sprint(err))
	}
	out, err := lab.RunAs(ctx, nobody, nobody, "sbatch", "--parsable", "-A", "teama", "--hold", "-N", "1", "--gpus-per-node", "8",
		"--exclusive", "-o", "/dev/null", "--wrap", "sleep 1000")
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	defer lab.Run(ctx, slurmlab.DefaultTimeout, "scancel", id)
	for _, qos := range []string{"gt-reclaim", "gt-borrow"} {
		if _, err := lab.RunAs(ctx, nobody, nobody, "scontrol", "update", "JobId="+id, "QOS="+qos); err == nil {
			t.Errorf("nobody moved their job %s to %s", id, qos)
		} else {
			refusals = append(refusals, err.Error())
		}
	}
	j := job(t, id)
	after := dump(t)
	faults.Record(faults.Row{Fault: "quota: a user names the reclaim or borrow QOS (sbatch --qos, scontrol update QOS=)",
		NoJobLost:          faults.Check(j.State == "PENDING" && j.Fields["QOS"] == "gt-teama", "job %s: %s in %s", id, j.State, j.Fields["QOS"]),
		NothingHeldForEver: faults.NA, NoDoubleRequeue: faults.NA,
		NothingLeft:   faults.Check(after == before, "Slurm's accounting changed"),
		SnapshotFresh: faults.NA, LogLine: slurmSays(refusals)})
	if j.Fields["QOS"] != "gt-teama" {
		t.Errorf("job %s is in QOS %s, want gt-teama", id, j.Fields["QOS"])
	}
	t.Logf("Slurm refused: %q", refusals)
}

// slurmSays is the first refusal's message from Slurm, or "" when one
// lacks it.
func slurmSays(refusals []string) string {
	for _, r := range refusals {
		if !strings.Contains(r, "Invalid qos specification") {
			return ""
		}
	}
	if len(refusals) == 0 {
		return ""
	}
	_, msg, _ := strings.Cut(refusals[0], "exit status 1: ")
	return msg
}

// TestNoRequeueJobDoesNotBorrow: teamb runs its share while teama lends;
// of its two more jobs the one submitted with --no-requeue (Slurm would
// cancel it when preempting it) stays in teamb's own QOS and is counted
// as waiting that cannot borrow; the other borrows.
func TestNoRequeueJobDoesNotBorrow(t *testing.T) {
	syncQuota(t)
	clean(t)
	fillOwn(t)
	noRequeue := teambJob(t, "--no-requeue")
	other := submit(t, "teamb", "gt-teamb", 1)
	staysOwnOtherBorrows(t, noRequeue, other, "quota: a job Slurm may not requeue (--no-requeue) waits beyond its share")
}

// teambJob submits a whole-node job of teamb's in its own QOS, with extra
// sbatch options.
func teambJob(t *testing.T, extra ...string) string {
	t.Helper()
	args := append([]string{"-o", "/dev/null", "-A", "teamb", "--qos", "gt-teamb", "-N", "1", "--gpus-per-node", "8", "--exclusive"}, extra...)
	id, err := lab.Submit(context.Background(), nil, append(args, "--wrap", "sleep 100000")...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// staysOwnOtherBorrows runs a quota cycle with teamb at its share and two
// 8-GPU jobs beyond it waiting: held, which may not borrow, and other,
// which may. other must run in gt-borrow, held wait in gt-teamb untouched
// by the controller, counted as NO-BORROW 8 in `gangtopo quota`; fault
// names the faults table's row. The cycle runs once Slurm says both wait
// for their QOS's limit: before its first scheduling pass over them
// Slurm may still say Resources, and the controller's re-binding, which
// leaves jobs held by a limit alone, cannot tell yet. A second cycle
// follows the move, as the daemon's next would.
func staysOwnOtherBorrows(t *testing.T, held, other, fault string) {
	t.Helper()
	for _, id := range []string{held, other} {
		waitFor(t, id, 30*time.Second, "waiting for its QOS's limit", func(j *slurmlab.Job) bool {
			return j.State == "PENDING" && strings.HasPrefix(j.Reason, "QOS")
		})
	}
	out := cycle(t)
	// a second cycle, as the daemon's next: the job moved to gt-borrow
	// may need its binding renewed to reach the lent nodes, which the
	// re-binding does once Slurm no longer holds it for its QOS's limit
	waitFor(t, other, 30*time.Second, "moved to gt-borrow", func(j *slurmlab.Job) bool { return j.Fields["QOS"] == "gt-borrow" })
	time.Sleep(2 * time.Second)
	out += cycle(t)
	waitFor(t, other, 60*time.Second, "running in gt-borrow", func(j *slurmlab.Job) bool {
		return j.State == "RUNNING" && j.Fields["QOS"] == "gt-borrow"
	})
	j := job(t, held)
	table := gangtopo(t, "quota", "--config", configFile, "--topology", clusterFile)
	line := ""
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 7 && f[0] == "teamb" {
			line = l
			if f[7] != "8" {
				t.Errorf("teamb's NO-BORROW is %s, want 8:\n%s", f[7], table)
			}
		}
	}
	if strings.Contains(out, `"job":"`+held+`"`) {
		t.Errorf("the controller changed job %s:\n%s", held, out)
	}
	faults.Record(faults.Row{Fault: fault,
		NoJobLost:          faults.Check(j.State == "PENDING" && j.Fields["QOS"] == "gt-teamb", "job %s: %s in %s", held, j.State, j.Fields["QOS"]),
		NothingHeldForEver: faults.NA, NoDoubleRequeue: faults.NA, NothingLeft: faults.NA, SnapshotFresh: faults.NA,
		LogLine: "gangtopo quota: " + strings.Join(strings.Fields(line), " ") + " (NO-BORROW)"})
	t.Logf("gangtopo quota:\n%s", table)
}

// TestSlurmdbdStoppedDuringCycle: with slurmdbd down, a quota cycle that
// would move teamb's waiting job changes nothing (no limit, no move) and
// says so; the snapshot is published all the same. Once slurmdbd is back,
// the next cycle makes the move.
func TestSlurmdbdStoppedDuringCycle(t *testing.T) {
	ctx := context.Background()
	syncQuota(t)
	clean(t)
	fillOwn(t)
	extra := submit(t, "teamb", "gt-teamb", 1)
	time.Sleep(2 * time.Second)
	before := dump(t)
	if err := lab.StopDbd(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	out := cycle(t)
	took := time.Since(t0)
	stat, serr := os.Stat(snapF)
	fresh := serr == nil && time.Since(stat.ModTime()) < 60*time.Second // max_snapshot_age: 60s
	j := job(t, extra)
	if err := lab.StartDbd(ctx); err != nil {
		t.Fatal(err)
	}
	after := dump(t)
	logLine := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "sacctmgr failed; the limits in force stay, no job is moved") {
			logLine = l
		}
	}
	changed := strings.Contains(out, "quota: QOS limit changed") || strings.Contains(out, "quota: waiting job moved")
	faults.Record(faults.Row{Fault: "quota: slurmdbd stopped during a quota cycle",
		NoJobLost:          faults.Check(j.State == "PENDING" && j.Fields["QOS"] == "gt-teamb", "job %s: %s in %s", extra, j.State, j.Fields["QOS"]),
		NothingHeldForEver: faults.NA, NoDoubleRequeue: faults.NA,
		NothingLeft:   faults.Check(after == before && !changed, "the cycle changed something"),
		SnapshotFresh: faults.Check(fresh, "snapshot not published (%v)", serr), LogLine: trimJSON(logLine)})
	if logLine == "" || changed {
		t.Errorf("cycle with slurmdbd down (took %s):\n%s", took, out)
	}
	t.Logf("the cycle with slurmdbd down took %s", took.Round(time.Millisecond))
	cycle(t)
	waitFor(t, extra, 60*time.Second, "running in gt-borrow once slurmdbd is back", func(j *slurmlab.Job) bool {
		return j.State == "RUNNING" && j.Fields["QOS"] == "gt-borrow"
	})
}

// trimJSON keeps a log line's message and error.
func trimJSON(line string) string {
	var parts []string
	for _, k := range []string{`"error":"`, `"message":"`} {
		if _, v, ok := strings.Cut(line, k); ok {
			v, _, _ = strings.Cut(v, `"`)
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, ": ")
}

// TestJobOverBorrowBoundDoesNotBorrow: under quota.borrow_max_gpu_hours
// of 100, teamb runs its share while teama lends; of its two more 8-GPU
// jobs the one with a day's time limit (192 GPU-hours, more than a reclaim
// may lose) stays in teamb's own QOS and is counted as waiting that cannot
// borrow; the one of an hour (8 GPU-hours) borrows. The time limits are
// read from squeue --json on this series.
func TestJobOverBorrowBoundDoesNotBorrow(t *testing.T) {
	good, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(configFile, good, 0o644)
	bounded := strings.Replace(string(good), "  job_interval: 0s\n", "  job_interval: 0s\n  borrow_max_gpu_hours: 100\n", 1)
	if bounded == string(good) {
		t.Fatal("the lab's gangtopo.yaml has no job_interval line to add the bound after")
	}
	if err := os.WriteFile(configFile, []byte(bounded), 0o644); err != nil {
		t.Fatal(err)
	}
	syncQuota(t)
	clean(t)
	fillOwn(t)
	long, short := teambJob(t, "--time", "1-00:00:00"), teambJob(t, "--time", "60")
	staysOwnOtherBorrows(t, long, short, "quota: a job over quota.borrow_max_gpu_hours (8 GPUs for a day, bound 100 GPU-h) waits beyond its share")
}
