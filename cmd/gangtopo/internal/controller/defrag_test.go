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

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// fakeSlurm records the defragmentation's Slurm commands.
type fakeSlurm struct {
	calls  []string
	states map[string]string
	holds  []defragrun.Hold
}

func (f *fakeSlurm) do(format string, args ...any) error {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return nil
}
func (f *fakeSlurm) Hold(_ context.Context, name, nodes, user string, d time.Duration) error {
	return f.do("hold %s %s %s", name, nodes, user)
}
func (f *fakeSlurm) Attach(_ context.Context, id, name string) error {
	return f.do("attach %s %s", id, name)
}
func (f *fakeSlurm) Detach(_ context.Context, id string) error { return f.do("detach %s", id) }
func (f *fakeSlurm) Unhold(_ context.Context, name string) error {
	var kept []defragrun.Hold // a new slice: a caller may be ranging over the old one
	for _, h := range f.holds {
		if h.Name != name {
			kept = append(kept, h)
		}
	}
	f.holds = kept
	return f.do("unhold %s", name)
}
func (f *fakeSlurm) Requeue(_ context.Context, id string) error {
	f.states[id] = "PENDING"
	return f.do("requeue %s", id)
}
func (f *fakeSlurm) Eligible(_ context.Context, id string) error { return f.do("eligible %s", id) }
func (f *fakeSlurm) Pin(_ context.Context, id, nodes string) error {
	return f.do("pin %s %s", id, nodes)
}
func (f *fakeSlurm) Job(_ context.Context, id string) (string, string, bool, error) {
	st, ok := f.states[id]
	return st, "Resources", ok, nil
}
func (f *fakeSlurm) Holds(context.Context) ([]defragrun.Hold, error) { return f.holds, nil }

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
	c := lab16
	s := occupancy.New(c)
	facts := map[string]slurmstate.JobFacts{}
	for _, n := range []string{"node01", "node05", "node09", "node13"} {
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
	gang.Job.AdminComment = gang.Decision
	return &defragrun.View{Snapshot: s, Facts: facts, Pending: []slurmstate.PendingJob{gang}, At: now}
}

func newDefragLab(t *testing.T, edit func(*ctld.DefragConfig)) (*defragDuty, *fakeSlurm, *bytes.Buffer) {
	t.Helper()
	cfg := ctld.Defaults()
	cfg.Jobs = jobsubmit.ScopeGPU
	cfg.Defrag.Scope = defrag.Scope{Partitions: []string{"gpu"}}
	cfg.Defrag.AuditLog = filepath.Join(t.TempDir(), "defrag.log")
	cfg.Defrag.Timeout = 20 * time.Millisecond
	cfg.Defrag.Expedite = false
	if edit != nil {
		edit(&cfg.Defrag)
	}
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "j1": "RUNNING", "j5": "RUNNING", "j9": "RUNNING", "j13": "RUNNING"}}
	var logs bytes.Buffer
	d := newDefragDuty(DefragSetup{ConfigPath: "/nonexistent/gangtopo.yaml", Config: cfg, Slurm: f,
		Preemption: func(context.Context) (defrag.Preemption, error) {
			return defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE",
				Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 1}}}, nil
		}}, zerolog.New(&logs), prometheus.NewRegistry(), time.Now)
	return d, f, &logs
}

func TestDefragPolicy(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name  string
		edit  func(*ctld.DefragConfig)
		calls []string
	}{
		{"off by default: only the holds are tended", nil, nil},
		{"on: leaf2 (job j5, the cheapest) is held and freed", func(c *ctld.DefragConfig) { c.Auto.Enabled = true },
			[]string{"hold gangtopo_defrag_40 node[05-08] alice", "attach 40 gangtopo_defrag_40", "requeue j5"}},
		// j5 costs 1 GPU x (10 min + 5 min overhead) x 1.5 (priority) = 0.375
		{"over the cost cap", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MaxCost = true, 0.3 }, nil},
		{"waited less than min_wait", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MinWait = true, 3*time.Hour }, nil},
		{"a gang smaller than min_gpus", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Auto.MinGPUs = true, 64 }, nil},
		{"no budget", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Limits.BudgetFraction = true, 0 }, nil},
		{"nothing named preemptible: nothing at all", func(c *ctld.DefragConfig) { c.Auto.Enabled, c.Scope = true, defrag.Scope{} }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, f, logs := newDefragLab(t, c.edit)
			v := defragView(t, now)
			d.cycle(context.Background(), v, func(context.Context) (*defragrun.View, error) { return defragView(t, now), nil })
			if diff := cmp.Diff(c.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
			}
		})
	}
}

// A gang Slurm's preemption would start (partition gpu, PriorityTier 5,
// over jobs of scavenger, 1) is pinned to the domain whose preemption costs
// least, once.
func TestDefragPinsPreemption(t *testing.T) {
	now := time.Now()
	d, f, logs := newDefragLab(t, func(c *ctld.DefragConfig) { c.PinPreemption, c.Scope = true, defrag.Scope{} })
	d.setup.Preemption = func(context.Context) (defrag.Preemption, error) {
		return defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE",
			Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 5}, "scavenger": {PriorityTier: 1}}}, nil
	}
	v := defragViewIn(t, now, "scavenger")
	d.cycle(context.Background(), v, nil)
	d.cycle(context.Background(), v, nil)
	if diff := cmp.Diff([]string{"pin 40 node[05-08]"}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s\nlog:\n%s", diff, logs)
	}
	if got := testutil.ToFloat64(d.m.pins.WithLabelValues("pinned")); got != 1 {
		t.Errorf("pins metric %g, want 1", got)
	}
	// in the same partition as its would-be victims, Slurm preempts
	// nothing for it: no pin
	d2, f2, _ := newDefragLab(t, func(c *ctld.DefragConfig) { c.PinPreemption, c.Scope = true, defrag.Scope{} })
	d2.cycle(context.Background(), defragView(t, now), nil)
	if len(f2.calls) != 0 {
		t.Errorf("pinned without a preemption that frees anything: %v", f2.calls)
	}
}
