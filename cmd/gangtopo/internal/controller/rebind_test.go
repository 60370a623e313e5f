package controller

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// rebindLab is the re-binding over Lab16 (8 GPUs per node, 4 nodes per
// leaf), with a fake scontrol that records the updates.
type rebindLab struct {
	t       *testing.T
	c       *topology.Cluster
	cfg     ctld.Config
	dec     *jobsubmit.Decider
	door    *actuate.Door
	r       *rebinder
	logs    bytes.Buffer
	updates []string // "ID: args"
	fail    error    // what the fake scontrol returns
	now     time.Time
}

func newRebindLab(t *testing.T, edit func(*ctld.RebindConfig)) *rebindLab {
	t.Helper()
	l := &rebindLab{t: t, c: topotest.Lab16(), now: time.Unix(1_800_000_000, 0)}
	cfg := ctld.Defaults()
	cfg.Jobs = jobsubmit.ScopeGPU
	if edit != nil {
		edit(&cfg.Rebind)
	}
	var err error
	if l.dec, err = jobsubmit.New(cfg.Policy, l.c); err != nil {
		t.Fatal(err)
	}
	// the fake scontrol: "update JobId=ID args..." recorded as "ID: args"
	run := func(_ context.Context, _ time.Duration, _ string, args ...string) (string, error) {
		l.updates = append(l.updates, strings.TrimPrefix(args[1], "JobId=")+": "+strings.Join(args[2:], " "))
		return "", l.fail
	}
	l.cfg = cfg
	l.door = actuate.NewDoor(run, actuate.Audit{Path: filepath.Join(t.TempDir(), "actions.log")}, actuate.Always{}, "controller", actuate.Config{})
	l.door.Now = func() time.Time { return l.now }
	l.r = newRebinder(RebindSetup{ConfigPath: "/nonexistent/gangtopo.yaml", Config: cfg}, l.door, zerolog.New(&l.logs), prometheus.NewRegistry())
	return l
}

// cycle is one duty round of the re-binding alone.
func (l *rebindLab) cycle(s *occupancy.Snapshot, pending []slurmstate.PendingJob) {
	l.door.Begin(context.Background())
	l.r.cycle(context.Background(), l.cfg, l.c, s, pending, nil)
}

// snapshot has busy in use (node -> GPUs) and every node carrying the
// features gen features writes.
func (l *rebindLab) snapshot(busy map[string]int) *occupancy.Snapshot {
	l.t.Helper()
	s := occupancy.New(l.c)
	for name, k := range busy {
		id, _ := l.c.NodeByName(name)
		var gpus []int
		for i := 0; i < k; i++ {
			gpus = append(gpus, i)
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
			l.t.Fatal(err)
		}
	}
	fs, err := jobsubmit.NodeFeatures(l.c, jobsubmit.DefaultFeaturePrefix)
	if err != nil {
		l.t.Fatal(err)
	}
	s.Features = fs
	s.Generation = 77
	return s
}

// submit is job j as the plugin rewrites it on s, pending as id.
func (l *rebindLab) submit(id string, priority uint32, s *occupancy.Snapshot, j jobsubmit.Job) slurmstate.PendingJob {
	l.t.Helper()
	res, err := l.dec.Decide(j, s, 1, place.New(l.c, l.dec.Policy().EngineOptions(nil)))
	if err != nil || res.Action != jobsubmit.Modify {
		l.t.Fatalf("submit %s: %v %v", id, err, res.Log)
	}
	now := res.Apply(j)
	return slurmstate.PendingJob{ID: id, Priority: priority, Decision: now.AdminComment, Job: now}
}

// nodesBut lists node01..node16 but those given.
func nodesBut(but ...string) map[string]int {
	m := map[string]int{}
	for i := 1; i <= 16; i++ {
		m[fmt.Sprintf("node%02d", i)] = 8
	}
	for _, b := range but {
		delete(m, b)
	}
	return m
}

// Two 1-GPU jobs bound at submit to node02's and node03's holes; then
// every node is full but node09: the job first in Slurm's order is
// re-bound there; node09 has room for both.
func TestRebindStaleJobs(t *testing.T) {
	l := newRebindLab(t, nil)
	atSubmit := nodesBut("node02", "node03")
	atSubmit["node02"], atSubmit["node03"] = 6, 6
	s0 := l.snapshot(atSubmit)
	a := l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"})
	b := l.submit("42", 20, s0, jobsubmit.Job{Name: "b", TresPerJob: "gres:gpu:2"})
	if a.Job.Features != "[gt_node02|gt_node03]" {
		t.Fatalf("bound at submit to %q", a.Job.Features)
	}
	now := l.snapshot(nodesBut("node09"))
	l.cycle(now, []slurmstate.PendingJob{a, b})
	want := []string{"42: Features=gt_node09 AdminComment=gangtopo v1 placed request=any:preferred gpus=2 domain=node09/nvl0 tier=nvlink bound=node09 snapshot=77: placed in nvlink node09/nvl0 on node09:0-1",
		"41: Features=gt_node09 AdminComment=gangtopo v1 placed request=any:preferred gpus=2 domain=node09/nvl0 tier=nvlink bound=node09 snapshot=77: placed in nvlink node09/nvl0 on node09:2-3"}
	if diff := cmp.Diff(want, l.updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s\nlog:\n%s", diff, l.logs.String())
	}
	if got := testutil.ToFloat64(l.r.m.rebinds.WithLabelValues("updated")); got != 2 {
		t.Errorf("gangtopo_rebinds_total{result=updated} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(l.r.m.stale); got != 2 {
		t.Errorf("gangtopo_stale_pending_jobs = %v, want 2", got)
	}
	if !strings.Contains(l.logs.String(), `"job":"42"`) || !strings.Contains(l.logs.String(), "re-bound a stale pending job") {
		t.Errorf("no log line per update:\n%s", l.logs.String())
	}

	// the next cycle, with the old fields (Slurm has not started them): a
	// job is not updated again within job_interval
	l.updates = nil
	l.now = l.now.Add(5 * time.Second)
	l.cycle(now, []slurmstate.PendingJob{a, b})
	if len(l.updates) != 0 || testutil.ToFloat64(l.r.m.skipped.WithLabelValues("job_interval")) != 2 {
		t.Errorf("second cycle updated %v; want none, 2 skipped", l.updates)
	}
	l.now = l.now.Add(3 * time.Minute)
	l.cycle(now, []slurmstate.PendingJob{a, b})
	if len(l.updates) != 2 {
		t.Errorf("after job_interval: updates %v, want both again", l.updates)
	}
}

// The second job Slurm would start does not get the GPUs the first was
// re-bound to: node09 has room for one of them.
func TestRebindHoldsWhatItMoved(t *testing.T) {
	l := newRebindLab(t, nil)
	atSubmit := nodesBut("node02")
	atSubmit["node02"] = 0
	s0 := l.snapshot(atSubmit)
	a := l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:8"})
	b := l.submit("42", 20, s0, jobsubmit.Job{Name: "b", TresPerJob: "gres:gpu:8"})
	l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{a, b})
	if len(l.updates) != 1 || !strings.HasPrefix(l.updates[0], "42: Features=gt_node09 ") {
		t.Errorf("updates %v; want job 42 (higher priority) on node09 only", l.updates)
	}
}

// A job that can start inside its binding takes its room before the jobs
// after it in Slurm's order: job 42 (bound to node09, free) comes first,
// so job 41, whose node02 filled, is not re-bound to node09, where Slurm
// would start 42 and leave 41 waiting. Without 42, 41 is.
func TestRebindLeavesRoomToJobsThatFitTheirBinding(t *testing.T) {
	l := newRebindLab(t, nil)
	first := l.submit("42", 20, l.snapshot(nodesBut("node09")), jobsubmit.Job{Name: "first", TresPerJob: "gres:gpu:8"})
	later := l.submit("41", 10, l.snapshot(nodesBut("node02")), jobsubmit.Job{Name: "later", TresPerJob: "gres:gpu:8"})
	if first.Job.Features != "gt_node09" || later.Job.Features != "gt_node02" {
		t.Fatalf("bound at submit to %q and %q", first.Job.Features, later.Job.Features)
	}
	now := l.snapshot(nodesBut("node09"))
	l.cycle(now, []slurmstate.PendingJob{later, first})
	if len(l.updates) != 0 {
		t.Errorf("updates %v; want none: node09 is job 42's, which Slurm starts first", l.updates)
	}
	l.cycle(now, []slurmstate.PendingJob{later})
	if len(l.updates) != 1 || !strings.HasPrefix(l.updates[0], "41: Features=gt_node09 ") {
		t.Errorf("without job 42: updates %v, want job 41 re-bound to node09", l.updates)
	}
}

func TestRebindLimits(t *testing.T) {
	l := newRebindLab(t, func(r *ctld.RebindConfig) { r.MaxPerCycle = 1 })
	atSubmit := nodesBut("node02")
	atSubmit["node02"] = 4
	s0 := l.snapshot(atSubmit)
	jobs := []slurmstate.PendingJob{l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"}),
		l.submit("42", 10, s0, jobsubmit.Job{Name: "b", TresPerJob: "gres:gpu:2"})}
	l.cycle(l.snapshot(nodesBut("node09")), jobs)
	if len(l.updates) != 1 || testutil.ToFloat64(l.r.m.skipped.WithLabelValues("max_per_cycle")) != 1 {
		t.Errorf("updates %v; want one, one skipped", l.updates)
	}

	// an update that times out ends the cycle's updates
	l = newRebindLab(t, nil)
	s0 = l.snapshot(atSubmit)
	jobs = []slurmstate.PendingJob{l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"}),
		l.submit("42", 10, s0, jobsubmit.Job{Name: "b", TresPerJob: "gres:gpu:2"})}
	l.fail = fmt.Errorf("scontrol update JobId=41: %w within 5s", slurmstate.ErrUpdateTimeout)
	l.cycle(l.snapshot(nodesBut("node09")), jobs)
	if len(l.updates) != 1 || testutil.ToFloat64(l.r.m.rebinds.WithLabelValues("failed")) != 1 {
		t.Errorf("updates %v; want one attempt, failed", l.updates)
	}

	// off: nothing
	l = newRebindLab(t, func(r *ctld.RebindConfig) { r.Enabled = false })
	l.cycle(l.snapshot(nodesBut("node09")), jobs)
	if len(l.updates) != 0 {
		t.Errorf("re-binding off, updates %v", l.updates)
	}
}

// Only jobs whose AdminComment holds a binding decision are looked at.
func TestRebindOnlyBoundJobs(t *testing.T) {
	l := newRebindLab(t, nil)
	s0 := l.snapshot(map[string]int{})
	unbound := l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:16", GangTopology: "any"})
	forged := slurmstate.PendingJob{ID: "43", Job: jobsubmit.Job{Features: "gt_node01", TresPerJob: "gres:gpu:1",
		Comment: "gangtopo v1 placed gpus=1 bound=node01"}}
	l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{unbound, forged})
	if len(l.updates) != 0 || testutil.ToFloat64(l.r.m.bound) != 0 {
		t.Errorf("updates %v, bound %v; want none", l.updates, testutil.ToFloat64(l.r.m.bound))
	}
}

// A held job, or one waiting for another, is not re-bound: it could not
// start now anyway.
func TestRebindLeavesJobsThatMayNotStartYet(t *testing.T) {
	l := newRebindLab(t, nil)
	atSubmit := nodesBut("node02")
	atSubmit["node02"] = 4
	s0 := l.snapshot(atSubmit)
	held := l.submit("41", 0, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"})
	held.Reason = "JobHeldUser"
	after := l.submit("42", 10, s0, jobsubmit.Job{Name: "b", TresPerJob: "gres:gpu:2"})
	after.Reason = "Dependency"
	l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{held, after})
	if len(l.updates) != 0 || testutil.ToFloat64(l.r.m.stale) != 0 {
		t.Errorf("updates %v, stale %v; want none", l.updates, testutil.ToFloat64(l.r.m.stale))
	}
	// the facts, whatever the reason says at the poll (bench-scale at
	// 20,000 jobs re-bound one such job): a held job has priority 0, a
	// dependent one its dependency listed
	held = l.submit("43", 0, s0, jobsubmit.Job{Name: "c", TresPerJob: "gres:gpu:2"})
	held.Reason = "None"
	after = l.submit("44", 10, s0, jobsubmit.Job{Name: "d", TresPerJob: "gres:gpu:2"})
	after.Reason, after.Dependency = "Priority", "afterok:7(unfulfilled)"
	free := l.submit("45", 10, s0, jobsubmit.Job{Name: "e", TresPerJob: "gres:gpu:2"})
	free.Reason = "Priority"
	l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{held, after, free})
	if len(l.updates) != 1 || !strings.HasPrefix(l.updates[0], "45: ") {
		t.Errorf("updates %v; want job 45's alone", l.updates)
	}
}

// A job that waits for a limit (its QOS's GPUs, its account's jobs, its
// partition down) is not re-bound: the limit holds it wherever it runs.
func TestRebindLeavesJobsHeldByALimit(t *testing.T) {
	for reason, want := range map[string]bool{"QOSGrpGRES": false, "AssocGrpGRES": false, "MaxGRESPerAccount": false,
		"QOSMaxGRESPerUser": false, "AccountingPolicy": false, "PartitionDown": false, "InvalidQOS": false,
		"Resources": true, "Priority": true, "ReqNodeNotAvail": true, "MaxPoweredUpNodes": true} {
		t.Run(reason, func(t *testing.T) {
			l := newRebindLab(t, nil)
			atSubmit := nodesBut("node02")
			atSubmit["node02"] = 4
			j := l.submit("41", 10, l.snapshot(atSubmit), jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"})
			j.Reason = reason
			l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{j})
			if got := len(l.updates) == 1; got != want {
				t.Errorf("reason %s: re-bound %v, want %v (updates %v)", reason, got, want, l.updates)
			}
		})
	}
}

// A job that started between the poll and the update is no failure.
func TestRebindJobGoneMeanwhile(t *testing.T) {
	l := newRebindLab(t, nil)
	atSubmit := nodesBut("node02")
	atSubmit["node02"] = 4
	s0 := l.snapshot(atSubmit)
	l.fail = fmt.Errorf("scontrol update JobId=41: exit status 1: Job is no longer pending execution for job 41")
	l.cycle(l.snapshot(nodesBut("node09")), []slurmstate.PendingJob{l.submit("41", 10, s0, jobsubmit.Job{Name: "a", TresPerJob: "gres:gpu:2"})})
	if testutil.ToFloat64(l.r.m.rebinds.WithLabelValues("gone")) != 1 || testutil.ToFloat64(l.r.m.rebinds.WithLabelValues("failed")) != 0 {
		t.Errorf("want the update counted gone, not failed:\n%s", l.logs.String())
	}
}
