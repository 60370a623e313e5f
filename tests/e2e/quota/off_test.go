package quota

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

// offStep is one command of docs/quota.md's "Switching quotas off", and
// what the lab does around it.
type offStep struct {
	cmd    string
	before func(t *testing.T) // the part of the step the text describes
	check  func(t *testing.T, out string)
}

// TestQuotaOffPutsBack runs docs/quota.md's "Switching quotas off" as
// written, after a sync, lending and a reclaim whose pinned job still
// waits (the borrow QOS's GraceTime keeps its victims a minute): Slurm's
// QOS and associations end as they were before any sync (sacctmgr's
// dumps compared), no job is left in gangtopo's QOS, no pin, no job lost.
func TestQuotaOffPutsBack(t *testing.T) {
	clean(t)
	syncQuota(t)
	sacctmgr(t, "modify", "qos", "where", "name=gt-borrow", "set", "GraceTime=60")
	var all []string
	all = append(all, fillOwn(t)...)
	for range 8 {
		all = append(all, submit(t, "teamb", "gt-teamb", 1))
	}
	time.Sleep(2 * time.Second)
	cycle(t)
	cycle(t)
	for _, id := range all[8:] {
		waitFor(t, id, 60*time.Second, "running in gt-borrow", func(j *slurmlab.Job) bool {
			return j.State == "RUNNING" && j.Fields["QOS"] == "gt-borrow"
		})
	}
	owner := submit(t, "teama", "gt-teama", 2)
	all = append(all, owner)
	time.Sleep(2 * time.Second)
	if out := cycle(t); !strings.Contains(out, "quota: entitled job pinned to reclaim borrowed GPUs") {
		t.Fatalf("no reclaim:\n%s", out)
	}
	good, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(configFile, good, 0o644)
	var lost faults.Outcome = "ok"
	steps := []offStep{
		{cmd: "gangtopo quota off",
			before: func(t *testing.T) { // "set quota.enabled: false in gangtopo.yaml"
				must(t, os.WriteFile(configFile, []byte(strings.Replace(string(good), "  enabled: true", "  enabled: false", 1)), 0o644))
				if j := job(t, owner); j.State != "PENDING" || j.Fields["QOS"] != "gt-reclaim" {
					t.Fatalf("teama's job %s: %s in %s, want pending pinned", owner, j.State, j.Fields["QOS"])
				}
			},
			check: func(t *testing.T, out string) {
				for _, w := range []string{"would run: sacctmgr -i modify account where name=teama set QOS-=gt-teama DefaultQOS=-1",
					"would run: scontrol update JobId=" + owner + " AdminComment=", "would run: sacctmgr -i delete qos where name=gt-reclaim"} {
					if !strings.Contains(out, w) {
						t.Errorf("the dry run does not say %q", w)
					}
				}
			}},
		{cmd: "gangtopo quota off --yes",
			check: func(t *testing.T, out string) {
				if !strings.Contains(out, "left: QOS gt-teamb: 8 jobs still run in it") {
					t.Errorf("quota off does not say gt-teamb is kept")
				}
				lost = stillThere(t, all)
			}},
		{cmd: "gangtopo quota off --yes",
			before: func(t *testing.T) { endJobsIn(t, "gt-") }, // "once the jobs it names have ended"
			check: func(t *testing.T, out string) {
				if strings.Contains(out, "left:") {
					t.Errorf("something is left")
				}
			}},
	}
	var want []string
	for _, s := range steps {
		want = append(want, s.cmd)
	}
	doc, err := docsection.Commands("../../../docs/quota.md", "## Switching quotas off")
	must(t, err)
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Fatalf("docs/quota.md's commands and this test's differ (-test +doc):\n%s", diff)
	}
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		out := runDocumented(t, s.cmd)
		t.Logf("%s:\n%s", s.cmd, out)
		s.check(t, out)
		if t.Failed() {
			t.FailNow()
		}
	}
	after := dump(t)
	left := jobsIn(t, "gt-")
	pins := pinned(t)
	faults.Record(faults.Row{Fault: "quota: quota off after a sync, lending and a reclaim",
		NoJobLost:          lost,
		NothingHeldForEver: faults.Check(len(pins) == 0, "pins left on jobs %v", pins),
		NoDoubleRequeue:    faults.NA,
		NothingLeft:        faults.Check(after == beforeSync && len(left) == 0, "accounting differs from before sync, or jobs %v in gangtopo's QOS", left),
		SnapshotFresh:      faults.NA, LogLine: "quota off: accounts, jobs and QOS put back; what jobs still ran in, removed after they ended"})
	if diff := cmp.Diff(beforeSync, after); diff != "" {
		t.Errorf("Slurm's accounting after quota off differs from before sync (-before +after):\n%s", diff)
	}
	if len(left) > 0 || len(pins) > 0 {
		t.Errorf("jobs in gangtopo's QOS: %v; pinned: %v", left, pins)
	}
}

// runDocumented runs one documented command with sh, as an administrator
// would type it: gangtopo on PATH, the lab's Slurm, gangtopo.yaml where
// $GANGTOPO_CONFIG says.
func runDocumented(t *testing.T, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	path := os.Getenv("PATH")
	for _, kv := range lab.Env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	cmd.Env = append(lab.Env(), "PATH="+filepath.Dir(os.Getenv("GANGTOPO_BIN"))+":"+path, "GANGTOPO_CONFIG="+configFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// squeueJobs lists every job: id, state, QOS, AdminComment.
func squeueJobs(t *testing.T) [][4]string {
	t.Helper()
	out, err := lab.Run(context.Background(), slurmlab.DefaultTimeout, "squeue", "-h", "-a", "-t", "all", "-o", "%i|%T|%q")
	must(t, err)
	_ = out
	var jobs [][4]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.SplitN(l, "|", 3)
		if len(f) != 3 {
			continue
		}
		j := job(t, f[0])
		jobs = append(jobs, [4]string{f[0], f[1], f[2], j.AdminComment})
	}
	return jobs
}

// jobsIn lists the jobs (pending or running) in a QOS whose name starts
// with prefix.
func jobsIn(t *testing.T, prefix string) []string {
	var out []string
	for _, j := range squeueJobs(t) {
		if strings.HasPrefix(j[2], prefix) && (j[1] == "PENDING" || j[1] == "RUNNING") {
			out = append(out, j[0]+" "+j[1]+" "+j[2])
		}
	}
	return out
}

// pinned lists the jobs carrying a gangtopo pin.
func pinned(t *testing.T) []string {
	var out []string
	for _, j := range squeueJobs(t) {
		if strings.Contains(j[3], "gangtopo-pin:") {
			out = append(out, j[0])
		}
	}
	return out
}

// endJobsIn cancels the jobs in gangtopo's QOS: the users' jobs ending.
func endJobsIn(t *testing.T, prefix string) {
	for _, j := range jobsIn(t, prefix) {
		id := strings.Fields(j)[0]
		if _, err := lab.Run(context.Background(), slurmlab.DefaultTimeout, "scancel", id); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(jobsIn(t, prefix)) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
}

// stillThere says whether every job is pending or running (none lost).
func stillThere(t *testing.T, ids []string) faults.Outcome {
	for _, id := range ids {
		if j := job(t, id); j.State != "PENDING" && j.State != "RUNNING" {
			return faults.Check(false, "job %s: %s", id, j.State)
		}
	}
	return "ok"
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
