package controller

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// fakeSlurm is Slurm for the defragmentation's door (run: the commands,
// recorded as their arguments) and its reads (defragrun.Reader).
type fakeSlurm struct {
	calls  []string
	states map[string]string
	holds  []defragrun.Hold
	listed int              // Holds calls: reservation listings
	fail   map[string]error // a command's first words -> its error
}

func (f *fakeSlurm) run(_ context.Context, _ time.Duration, _ string, args ...string) (string, error) {
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	for prefix, err := range f.fail {
		if strings.HasPrefix(line, prefix) {
			return "", err
		}
	}
	if id, ok := strings.CutPrefix(line, "requeue "); ok {
		f.states[id] = "PENDING"
	}
	return "", nil
}

func (f *fakeSlurm) Job(_ context.Context, id string) (string, string, bool, error) {
	st, ok := f.states[id]
	return st, "Resources", ok, nil
}
func (f *fakeSlurm) Holds(context.Context) ([]defragrun.Hold, error) {
	f.listed++
	return f.holds, nil
}

// defragView is lab16 with a 1-GPU job in each leaf (j1 on node01, j5 on
// node05, ...), each started an hour ago, j5 ten minutes ago (the
// cheapest), and a 32-GPU leaf gang (job 40) pending for two hours.
func defragView(t *testing.T, now time.Time) *defragrun.View {
	t.Helper()
	return defragViewIn(t, now, "gpu")
}

// lab16 is one cluster for every view (the planner's engine is for one).
var lab16 = topotest.Lab16()

func defragViewIn(t *testing.T, now time.Time, partition string) *defragrun.View {
	t.Helper()
	return defragViewOn(t, now, partition, "node01", "node05", "node09", "node13")
}

// defragViewOn is defragViewIn with the 1-GPU jobs on nodes only.
func defragViewOn(t *testing.T, now time.Time, partition string, nodes ...string) *defragrun.View {
	t.Helper()
	c := lab16
	s := occupancy.New(c)
	facts := map[string]slurmstate.JobFacts{}
	for _, n := range nodes {
		id, _ := c.NodeByName(n)
		job := "j" + strings.TrimLeft(n[4:], "0")
		if err := s.AddJob(occupancy.Job{ID: job, User: "bob", Partition: partition,
			Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: []int{0}, Milli: 1000, CPUMilli: 1000}}}}); err != nil {
			t.Fatal(err)
		}
		start := now.Add(-time.Hour)
		if job == "j5" {
			start = now.Add(-10 * time.Minute)
		}
		facts[job] = slurmstate.JobFacts{Requeue: true, Start: start, Known: true, Priority: 100}
	}
	gang := slurmstate.PendingJob{ID: "40", Target: "40", Priority: 100, Reason: "Resources", Submit: now.Add(-2 * time.Hour), User: "alice",
		Decision: "gangtopo v1 waiting request=leaf:required gpus=32 shape=4x8 bound=leaf1,leaf2,leaf3,leaf4 snapshot=1: no leaf has room",
		Job: jobsubmit.Job{Name: "train", Partition: "gpu", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, NumTasks: 4,
			Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]"}}
	gang.Job.AdminComment, gang.Facts.AdminComment = gang.Decision, gang.Decision
	return &defragrun.View{Snapshot: s, Facts: facts, Pending: []slurmstate.PendingJob{gang}, At: now}
}

func newDefragLab(t *testing.T, edit func(*ctld.DefragConfig)) (*defragDuty, *fakeSlurm, *bytes.Buffer) {
	t.Helper()
	cfg := ctld.Defaults()
	cfg.Jobs = jobsubmit.ScopeGPU
	cfg.Defrag.Scope = defrag.Scope{Partitions: []string{"gpu"}}
	cfg.Actions.AuditLog = filepath.Join(t.TempDir(), "actions.log")
	cfg.Defrag.AuditLog = cfg.Actions.AuditLog
	cfg.Defrag.Timeout = 20 * time.Millisecond
	cfg.Defrag.Expedite = false
	if edit != nil {
		edit(&cfg.Defrag)
	}
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "j1": "RUNNING", "j5": "RUNNING", "j9": "RUNNING", "j13": "RUNNING"}}
	var logs bytes.Buffer
	door := actuate.NewDoor(f.run, actuate.Audit{Path: cfg.Actions.AuditLog}, actuate.Always{}, "controller", actuate.Config{MaxPerCycle: 50})
	d := newDefragDuty(DefragSetup{ConfigPath: "/nonexistent/gangtopo.yaml", Config: cfg, Slurm: f,
		Preemption: func(context.Context) (defrag.Preemption, error) {
			return defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE",
				Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 1}}}, nil
		}}, door, zerolog.New(&logs), prometheus.NewRegistry(), time.Now)
	return d, f, &logs
}

// The commands of a plan for gang 40 in leaf2.
const (
	holdLeaf2   = "create reservation ReservationName=gangtopo_defrag_40 StartTime=now Duration=10 Nodes=node[05-08] Users=alice Flags=IGNORE_JOBS,FLEX,NO_HOLD_JOBS_AFTER_END"
	attachLeaf2 = "update JobId=40 ReservationName=gangtopo_defrag_40"
)

// writeAudit writes earlier changes into the duty's audit log.
func writeAudit(t *testing.T, d *defragDuty, es ...actuate.Entry) {
	t.Helper()
	for _, e := range es {
		if err := (actuate.Audit{Path: d.cfg.Actions.AuditLog}).Append(e); err != nil {
			t.Fatal(err)
		}
	}
}

// aPlanFor is the audit of a plan carried out for gang 40 at `at`, that
// ended (when reason is not "") as reason says.
func aPlanFor(at time.Time, reason string) []actuate.Entry {
	r := "gangtopo_defrag_40"
	es := []actuate.Entry{{Time: at, Ref: "h", Action: "hold", Gang: "40", Reservation: r, Result: "ok"},
		{Time: at, Ref: "a", Action: "attach", Job: "40", Gang: "40", Reservation: r, Result: "ok"},
		{Time: at, Ref: "r", Action: "requeue", Job: "j9", Gang: "40", Reservation: r, Result: "ok"}}
	if reason != "" {
		es = append(es, actuate.Entry{Time: at.Add(10 * time.Minute), Ref: "e", Action: "release", Gang: "40", Reservation: r, Result: "ok", Reason: reason})
	}
	return es
}

func TestDefragPolicy(t *testing.T) {
	now := time.Now()
	plan := []string{holdLeaf2, attachLeaf2, "requeue j5"}
	cases := []struct {
		name   string
		edit   func(*ctld.DefragConfig)
		reason string          // the gang's pending reason ("": Resources)
		audit  []actuate.Entry // earlier changes
		calls  []string
	}{
		{"off by default", nil, "", nil, nil},
		{"on: leaf2 (job j5, the cheapest) is held and freed", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "", nil, plan},
		// j5 costs 1 GPU x (10 min + 5 min overhead) x 1.5 (priority) = 0.375
		{"over the cost cap", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MaxCost = true, 0.3 }, "", nil, nil},
		{"waited less than min_wait", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MinWait = true, 3*time.Hour }, "", nil, nil},
		{"a gang smaller than min_gpus", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MinGPUs = true, 64 }, "", nil, nil},
		{"no budget", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Limits.BudgetFraction = true, 0 }, "", nil, nil},
		{"nothing named preemptible: nothing at all", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Scope = true, defrag.Scope{} }, "", nil, nil},
		{"waiting for its QOS's GPU limit: no requeue starts it", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "QOSGrpGRES", nil, nil},
		{"waiting for a license", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "Licenses", nil, nil},
		{"behind higher priorities", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "Priority", nil, plan},
		// a plan 15 min ago whose hold ran out without the gang: weight 2,
		// backed off 20 min after it
		{"backed off after a plan that did not start it", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "",
			aPlanFor(now.Add(-15*time.Minute), "the hold runs out and the gang has not started (Resources)"), nil},
		{"the back-off over (25 min after)", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "",
			aPlanFor(now.Add(-25*time.Minute), "the hold runs out and the gang has not started (Resources)"), plan},
		// weight 1 (it started, then waits again: requeued by someone): 10 min
		{"backed off after a plan that started it", func(c *ctld.DefragConfig) { c.Auto.Enabled = true }, "",
			aPlanFor(now.Add(-5*time.Minute), defragrun.ReasonRuns), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, f, logs := newDefragLab(t, c.edit)
			writeAudit(t, d, c.audit...)
			v := defragView(t, now)
			if c.reason != "" {
				v.Pending[0].Reason = c.reason
			}
			d.cycle(context.Background(), d.cfg, v, func(context.Context) (*defragrun.View, error) { return defragView(t, now), nil })
			if diff := cmp.Diff(c.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
		})
	}
}

// The policy plans only for a gang Slurm cannot start where it is: one
// that fits now (a leaf free, Slurm has not scheduled it yet) gets no
// hold and no requeue, and counts as no_plan.
func TestDefragPolicyLeavesAGangThatFits(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name   string
		nodes  []string // where the 1-GPU jobs run
		calls  []string
		noPlan float64 // gangtopo_defrag_refused_total{reason="no_plan"}
	}{
		{"a job in every leaf: leaf2's (j5, the cheapest) is requeued", []string{"node01", "node05", "node09", "node13"},
			[]string{holdLeaf2, attachLeaf2, "requeue j5"}, 0},
		// leaf4 holds nothing (j13 gone): 32 GPUs free in one leaf
		{"leaf4 is free: it fits now", []string{"node01", "node05", "node09"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.Auto.Enabled = true })
			view := func(context.Context) (*defragrun.View, error) { return defragViewOn(t, now, "gpu", tt.nodes...), nil }
			v, _ := view(context.Background())
			d.cycle(context.Background(), d.cfg, v, view)
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
			if got := testutil.ToFloat64(d.m.refused.WithLabelValues("no_plan")); got != tt.noPlan {
				t.Errorf("refused no_plan %g, want %g", got, tt.noPlan)
			}
		})
	}
}

// twoGangs is defragView with a second 32-GPU leaf gang, 41, pending for
// an hour (40, older, is planned for first); with leaf1, 40 is bound to
// leaf1 alone, whose job j1 ran an hour: taking it costs 1 GPU x (60 min
// + 5 min overhead) x 1.5 = 1.625, where 41 takes j5 on leaf2 for 0.375.
func twoGangs(t *testing.T, now time.Time, leaf1 bool) *defragrun.View {
	t.Helper()
	v := defragView(t, now)
	g := v.Pending[0]
	g.ID, g.Target, g.Submit = "41", "41", now.Add(-time.Hour)
	v.Pending = append(v.Pending, g)
	if leaf1 {
		g40 := &v.Pending[0]
		g40.Decision = strings.Replace(g40.Decision, "bound=leaf1,leaf2,leaf3,leaf4", "bound=leaf1", 1)
		g40.Job.Features = "[gt_leaf1]"
		g40.Job.AdminComment, g40.Facts.AdminComment = g40.Decision, g40.Decision
	}
	return v
}

// The policy's own limits: at most max_per_cycle plans carried out a
// cycle, and at most max_tries gangs planned for (the oldest first), a
// plan or not. The observed view is the first one again (Slurm shows no
// change yet), so each gang could have a plan on leaf2.
func TestDefragPolicyLimits(t *testing.T) {
	now := time.Now()
	plan41 := []string{strings.ReplaceAll(holdLeaf2, "_40", "_41"), "update JobId=41 ReservationName=gangtopo_defrag_41", "requeue j5"}
	tests := []struct {
		name            string
		perCycle, tries int
		leaf1           bool // 40 bound to leaf1: over max_cost 1
		calls           []string
	}{
		{"max_per_cycle 1: 40's plan only", 1, 8, false, []string{holdLeaf2, attachLeaf2, "requeue j5"}},
		// 40 is tried first, its plan costs too much: the one try is spent
		{"max_tries 1: 41 is not tried", 1, 1, true, nil},
		{"max_tries 2: 41 is", 1, 2, true, plan41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) {
				c.Auto.Enabled, c.Auto.MaxPerCycle, c.Auto.MaxTries, c.Auto.MaxCost = true, tt.perCycle, tt.tries, 1
			})
			f.states["41"] = "PENDING"
			view := func(context.Context) (*defragrun.View, error) { return twoGangs(t, now, tt.leaf1), nil }
			v, _ := view(context.Background())
			d.cycle(context.Background(), d.cfg, v, view)
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
		})
	}
}

// A carried plan backs its gang off: the next round's view still shows the
// gang pending, out of its hold (the hold ended, say), and no new plan is
// made for it, with fresh victims or not.
func TestDefragCarriedPlanBacksTheGangOff(t *testing.T) {
	now := time.Now()
	d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.Auto.Enabled = true })
	observe := func(context.Context) (*defragrun.View, error) { return defragView(t, now), nil }
	d.cycle(context.Background(), d.cfg, defragView(t, now), observe)
	first := len(f.calls)
	for i := 1; i <= 3; i++ {
		d.door.Begin(context.Background())
		d.cycle(context.Background(), d.cfg, defragView(t, now.Add(time.Duration(i)*time.Minute)), observe)
	}
	if first != 3 || len(f.calls) != first {
		t.Errorf("calls %q: want one plan (3 changes), then none\nlog:\n%s", f.calls, logs)
	}
}

// A hold whose command fails (slurmctld did not answer within
// defrag.timeout) gives the plan up before anything else is changed, and
// the round goes on: found on the lab, where the duty dereferenced the
// missing outcome and the controller died, its snapshot with it.
func TestDefragHoldFails(t *testing.T) {
	now := time.Now()
	d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.Auto.Enabled = true })
	f.fail = map[string]error{"create reservation": slurmstate.ErrUpdateTimeout}
	observe := func(context.Context) (*defragrun.View, error) { return defragView(t, now), nil }
	d.cycle(context.Background(), d.cfg, defragView(t, now), observe)
	if diff := cmp.Diff([]string{holdLeaf2}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
	}
	if got := testutil.ToFloat64(d.m.plans.WithLabelValues("failed")); got != 1 {
		t.Errorf("plans failed: %v, want 1\nlog:\n%s", got, logs)
	}
	if !strings.Contains(logs.String(), "defrag: a plan was not carried out") {
		t.Errorf("no line says the plan was not carried out:\n%s", logs)
	}
}

// A gang Slurm's preemption would start (partition gpu, PriorityTier 5,
// over jobs of scavenger, 1) is pinned to the domain whose preemption costs
// least, once, with the mark that says by whom and until when; a gang
// that fits now is not pinned (Slurm starts it where it fits); nor is one
// Slurm preempts nothing for.
func TestDefragPinsPreemption(t *testing.T) {
	now := time.Now()
	scavenger := func(c *ctld.DefragConfig) { c.PinPreemption, c.Scope = true, defrag.Scope{} }
	rule := func(context.Context) (defrag.Preemption, error) {
		return defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE",
			Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 5}, "scavenger": {PriorityTier: 1}}}, nil
	}
	until := now.Add(15 * time.Minute).UTC().Format(time.RFC3339)
	pin := "update JobId=40 ReqNodeList=node[05-08] AdminComment=gangtopo-pin: by=defrag nodes=node[05-08] until=" + until + " | " + defragView(t, now).Pending[0].Decision
	tests := []struct {
		name  string
		view  func() *defragrun.View
		calls []string
	}{
		{"preemptible jobs in every leaf: pinned to leaf2, whose job is the cheapest", func() *defragrun.View { return defragViewIn(t, now, "scavenger") }, []string{pin}},
		// leaf4 holds nothing (j13 gone): the gang fits now
		{"a leaf is free: it fits now, no pin", func() *defragrun.View {
			return defragViewOn(t, now, "scavenger", "node01", "node05", "node09")
		}, nil},
		{"its would-be victims are in its own partition: Slurm preempts none, no pin", func() *defragrun.View { return defragView(t, now) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, logs := newDefragLab(t, scavenger)
			d.setup.Preemption = rule
			v := tt.view()
			d.cycle(context.Background(), d.cfg, v, nil)
			d.door.Begin(context.Background())
			d.cycle(context.Background(), d.cfg, v, nil) // the same view again: no second pin
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
			if got := testutil.ToFloat64(d.m.pins.WithLabelValues("pinned")); got != float64(len(tt.calls)) {
				t.Errorf("pins metric %g, want %d", got, len(tt.calls))
			}
		})
	}
}

// Switched off, the holds of waiting gangs are put back; the duty's
// section off, holds left from before are still looked for, once a
// minute.
func TestDefragTendsHolds(t *testing.T) {
	now := time.Now()
	d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.Scope = defrag.Scope{} })
	f.holds = []defragrun.Hold{{Name: "gangtopo_defrag_40", Start: now.Add(-30 * time.Second), End: now.Add(9 * time.Minute)}}
	d.tend(context.Background(), d.cfg, false, now, nil)
	// made 30 s ago, its plan may still come: kept; looked at again
	// only a minute later while the section is off
	d.tend(context.Background(), d.cfg, true, now.Add(30*time.Second), nil)
	if len(f.calls) != 0 {
		t.Fatalf("calls %q, want none yet", f.calls)
	}
	d.tend(context.Background(), d.cfg, true, now.Add(61*time.Second), nil)
	want := []string{"update JobId=40 ReservationName=", "delete ReservationName=gangtopo_defrag_40"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
	}
}

// With the duty on, Slurm's reservations are listed every round only
// while a hold may be in flight; otherwise once a minute.
func TestDefragListsHoldsWhenOneMayBeInFlight(t *testing.T) {
	now := time.Now()
	inHold := []slurmstate.PendingJob{{ID: "40", Facts: slurmstate.JobFacts{Reservation: "gangtopo_defrag_40"}}}
	other := []slurmstate.PendingJob{{ID: "41", Facts: slurmstate.JobFacts{Reservation: "maintenance"}}}
	hold := defragrun.Hold{Name: "gangtopo_defrag_40", Start: now.Add(-30 * time.Second), End: now.Add(9 * time.Minute)}
	for _, tc := range []struct {
		name    string
		holds   []defragrun.Hold
		pending []slurmstate.PendingJob
		tried   bool
		want    int // listings in 6 rounds 5 s apart (the first lists)
	}{
		{"nothing in flight: the first round, then once a minute", nil, other, false, 1},
		{"a pending job waits in a hold", nil, inHold, false, 6},
		{"the last listing kept a hold", []defragrun.Hold{hold}, nil, false, 6},
		{"a plan was tried", nil, nil, true, 2}, // the first round, then the round after the try
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, f, _ := newDefragLab(t, nil)
			f.holds = tc.holds
			for i := range 6 {
				if i == 1 {
					d.tried = tc.tried
				}
				d.tend(context.Background(), d.cfg, false, now.Add(time.Duration(i)*5*time.Second), tc.pending)
			}
			if f.listed != tc.want {
				t.Errorf("listed %d times in 6 rounds, want %d", f.listed, tc.want)
			}
		})
	}
	// a minute after the last look, it looks again
	d, f, _ := newDefragLab(t, nil)
	d.tend(context.Background(), d.cfg, false, now, nil)
	d.tend(context.Background(), d.cfg, false, now.Add(time.Minute), nil)
	if f.listed != 2 {
		t.Errorf("listed %d times a minute apart, want 2", f.listed)
	}
}
