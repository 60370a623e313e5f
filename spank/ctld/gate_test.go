package ctld

import (
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
