package ctld

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// gateFixture is a gate over topotest.Lab16 (node01..node16, 8 H100 each,
// leaf1 = node01-04 ... leaf4 = node13-16, spine1 = leaf1-2, spine2 =
// leaf3-4) with a snapshot in which `busy` maps node names to GPUs in use.
func gateFixture(t *testing.T, edit func(*Config), busy map[string]int) *Gate {
	t.Helper()
	c := topotest.Lab16()
	cfg := Defaults()
	cfg.Jobs = jobsubmit.ScopeGPU
	cfg.Snapshot = filepath.Join(t.TempDir(), "snapshot.json")
	cfg.Deadline = time.Second
	if edit != nil {
		edit(&cfg)
	}
	cfg.Default = mustOption(t, cfg.DefaultTopology)
	g, err := NewWithCluster(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	if busy != nil {
		writeSnapshot(t, c, cfg.Snapshot, busy)
		if msg := g.Store().Refresh(); !strings.Contains(msg, "loaded") {
			t.Fatalf("snapshot not loaded: %s", msg)
		}
	}
	return g
}

func writeSnapshot(t *testing.T, c *topology.Cluster, path string, busy map[string]int) {
	t.Helper()
	s := occupancy.New(c)
	s.Generation, s.Time = 7, time.Now()
	for name, k := range busy {
		id, ok := c.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		var gpus []int
		for i := 0; i < k; i++ {
			gpus = append(gpus, i)
		}
		if err := s.AddJob(occupancy.Job{ID: name, Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Encode(f, "test"); err != nil {
		t.Fatal(err)
	}
}

// Internal failures leave the job as submitted (on_failure: open) or refuse
// it (closed), with one log line; the gate keeps working afterwards.
func TestSubmitFailures(t *testing.T) {
	gang := jobsubmit.Job{Name: "j", TresPerJob: "gres:gpu:16", GangTopology: "leaf"}
	tests := []struct {
		name    string
		busy    map[string]int // nil: no snapshot file
		hook    func(jobsubmit.Job)
		closed  bool
		wantLog string
	}{
		{"no snapshot", nil, nil, false, "snapshot not loaded yet"},
		{"no snapshot, fail closed", nil, nil, true, "snapshot not loaded yet"},
		{"engine panic", map[string]int{}, func(jobsubmit.Job) { panic("boom") }, false, "placement engine panicked: boom"},
		{"engine panic, fail closed", map[string]int{}, func(jobsubmit.Job) { panic("boom") }, true, "placement engine panicked: boom"},
		{"deadline", map[string]int{}, func(jobsubmit.Job) { time.Sleep(300 * time.Millisecond) }, false, "placement took longer than the 50ms deadline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gateFixture(t, func(c *Config) {
				c.Deadline = 50 * time.Millisecond
				if tc.closed {
					c.OnFailure = FailClosed
				}
			}, tc.busy)
			if tc.hook != nil {
				faultHook = tc.hook
				defer func() { faultHook = func(jobsubmit.Job) {} }()
			}
			got := g.Submit(gang, time.Now())
			want := jobsubmit.Keep
			if tc.closed {
				want = jobsubmit.Reject
			}
			if got.Action != want || got.LogLevel != jobsubmit.LogError || !strings.Contains(got.Log, tc.wantLog) {
				t.Fatalf("got action %v, level %v, log %q; want action %v and an error log with %q", got.Action, got.LogLevel, got.Log, want, tc.wantLog)
			}
			if tc.closed && !strings.Contains(got.ErrMsg, "placement is unavailable") {
				t.Errorf("fail-closed message %q", got.ErrMsg)
			}
			if tc.busy == nil {
				return
			}
			faultHook = func(jobsubmit.Job) {}
			if again := g.Submit(gang, time.Now()); again.Action != jobsubmit.Modify {
				t.Errorf("next job after the failure: %v (%s)", again.Action, again.Log)
			}
		})
	}
}

// A burst of submissions before the next snapshot: held decisions keep
// the second gang from being sent to the leaf the first one took.
func TestSubmitBurstUsesHeldDecisions(t *testing.T) {
	g := gateFixture(t, nil, map[string]int{})
	now := time.Now()
	first := g.Submit(jobsubmit.Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"}, now)
	second := g.Submit(jobsubmit.Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"}, now)
	if first.Decision.Domain == "" || first.Decision.Domain == second.Decision.Domain {
		t.Errorf("both gangs went to %q and %q", first.Decision.Domain, second.Decision.Domain)
	}
}

func mustOption(t *testing.T, s string) request.Option {
	t.Helper()
	o, err := request.ParseOption(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// waitAbandoned waits until at most n engine calls run past their deadline
// (tests before may have left one sleeping).
func waitAbandoned(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); abandoned.Load() > n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d engine calls still running past their deadline", abandoned.Load())
		}
	}
}

// An engine call that never returns is abandoned at the deadline; after
// maxAbandoned of them no new call starts (each would hold a goroutine
// inside slurmctld for good): jobs are answered at once as on_failure
// says, and placement resumes when the stuck calls return.
func TestSubmitCapsAbandonedEngineCalls(t *testing.T) {
	waitAbandoned(t, 0)
	g := gateFixture(t, func(c *Config) { c.Deadline = 20 * time.Millisecond }, map[string]int{})
	gang := jobsubmit.Job{Name: "j", TresPerJob: "gres:gpu:8", GangTopology: "node"}
	release := make(chan struct{})
	var started atomic.Int32
	faultHook = func(jobsubmit.Job) { started.Add(1); <-release }
	defer func() { faultHook = func(jobsubmit.Job) {} }()
	for i := 0; i < maxAbandoned; i++ {
		if got := g.Submit(gang, time.Now()); !strings.Contains(got.Log, "placement took longer than the 20ms deadline") {
			t.Fatalf("call %d: %q", i, got.Log)
		}
	}
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		got := g.Submit(gang, time.Now())
		if got.Action != jobsubmit.Keep || !strings.Contains(got.Log, "2 placements are still running past their deadline") {
			t.Fatalf("call at the cap: action %v, log %q", got.Action, got.Log)
		}
		if d := time.Since(t0); d > 10*time.Millisecond {
			t.Errorf("call at the cap took %v: it must not wait for the deadline", d)
		}
	}
	if n := started.Load(); n != maxAbandoned {
		t.Errorf("%d engine calls started, want %d (none at the cap)", n, maxAbandoned)
	}
	close(release)
	waitAbandoned(t, 0)
	faultHook = func(jobsubmit.Job) {}
	if got := g.Submit(gang, time.Now()); got.Action != jobsubmit.Modify {
		t.Errorf("after the stuck calls returned: %v (%s)", got.Action, got.Log)
	}
}

// A user's update of a job's features keeps gangtopo's binding from the
// snapshot's bindings; without a snapshot the update passes, with a line.
func TestModifyKeepsBinding(t *testing.T) {
	g := gateFixture(t, nil, nil)
	feat := "gt_h100"
	m := jobsubmit.Modification{UserID: 1000, JobID: "12", Features: &feat}
	if res := g.Modify(m); res.Action != jobsubmit.Keep || !strings.Contains(res.Log, "no snapshot loaded") {
		t.Errorf("without a snapshot: %v %q", res.Action, res.Log)
	}
	c := g.Cluster()
	s := occupancy.New(c)
	s.Generation, s.Time = 8, time.Now()
	s.Bindings = []occupancy.Binding{{Job: "12", Features: "[gt_node02|gt_node06]"}}
	f, err := os.Create(g.cfg.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Encode(f, "test"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	g.Store().Refresh()
	res := g.Modify(m)
	if res.Action != jobsubmit.Modify || res.Features == nil || *res.Features != "(gt_h100)&[gt_node02|gt_node06]" {
		t.Errorf("update: %v %v (%s)", res.Action, res.Features, res.Log)
	}
}

// Every task of an array placed now is held: the next job does not get
// their GPUs.
func TestSubmitHoldsEveryTask(t *testing.T) {
	g := gateFixture(t, nil, map[string]int{})
	arr := g.Submit(jobsubmit.Job{Name: "arr", TresPerJob: "gres:gpu:1", ArrayInx: "0-119"}, time.Now())
	if arr.Decision.Tasks != 120 {
		t.Fatalf("array: %s", arr.Log)
	}
	// 128 GPUs, 120 held: 8 are left, one whole node
	if res := g.Submit(jobsubmit.Job{Name: "big", TresPerJob: "gres:gpu:16", GangTopology: "any"}, time.Now()); res.Decision.Verdict != jobsubmit.VerdictWaiting {
		t.Errorf("after the array, a 16-GPU job: %s", res.Log)
	}
}
