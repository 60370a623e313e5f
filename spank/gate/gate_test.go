package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	cfg.Jobs = ScopeGPU
	cfg.Snapshot = filepath.Join(t.TempDir(), "snapshot.json")
	cfg.Deadline = time.Second
	if edit != nil {
		edit(&cfg)
	}
	cfg.Default = mustOption(t, cfg.DefaultTopology)
	g := NewWithCluster(cfg, c)
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

// full lists whole nodes in use.
func full(names ...string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n] = 8
	}
	return m
}

func with(m map[string]int, name string, k int) map[string]int {
	m[name] = k
	return m
}

// rewrite is the part of a Result the tests compare.
type rewrite struct {
	Action                                              Action
	Verdict                                             Verdict
	Features, Prefer, ExcNodes, TresPerJob, TresPerNode string
	MinNodes, MaxNodes                                  uint32
	Domain, Shape                                       string
	ErrMsg                                              string
}

func summarize(r Result) rewrite {
	s := func(p *string) string {
		if p == nil {
			return "<unchanged>"
		}
		return *p
	}
	return rewrite{Action: r.Action, Verdict: r.Decision.Verdict, Features: s(r.Features), Prefer: s(r.Prefer),
		ExcNodes: s(r.ExcNodes), TresPerJob: s(r.TresPerJob), TresPerNode: s(r.TresPerNode),
		MinNodes: r.MinNodes, MaxNodes: r.MaxNodes, Domain: r.Decision.Domain, Shape: r.Decision.Shape, ErrMsg: r.ErrMsg}
}

const u = "<unchanged>"

func TestSubmitRewrites(t *testing.T) {
	tests := []struct {
		name string
		busy map[string]int
		job  Job
		want rewrite
	}{
		{
			// node01 and node05 taken: leaves 1 and 2 have 3 whole nodes, 3
			// and 4 have 4. The gang goes to leaf3 as 4x8; every leaf could
			// hold 32 GPUs some day, so all are listed, the free ones first.
			name: "32 GPUs at leaf avoid the broken leaves",
			busy: full("node01", "node05"),
			job:  Job{Name: "gang", TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", Prefer: u,
				ExcNodes: u, TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "leaf3", Shape: "4x8"},
		},
		{
			name: "8 GPUs at nvlink stay on one node",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:8", GangTopology: "nvlink"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				MinNodes: 1, MaxNodes: 1, Domain: "node01/nvl0"},
		},
		{
			name: "16 GPUs with slice=8 take two whole nodes of one leaf",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf,slice=8"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Domain: "leaf1", Shape: "2x8"},
		},
		{
			name: "preferred binds while the tier has room",
			busy: full("node01", "node05"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf3|gt_leaf4|gt_leaf1|gt_leaf2]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "leaf3", Shape: "4x8"},
		},
		{
			// one node busy per leaf: no leaf has room; the engine goes to
			// spine1 (node02-04 + node06) and the job is left unbound
			name: "preferred without room goes wider",
			busy: full("node01", "node05", "node09", "node13"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf:preferred"},
			want: rewrite{Action: Modify, Verdict: VerdictWider, Features: u, Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, Domain: "spine1", Shape: "4x8"},
		},
		{
			// one node busy in every leaf: no leaf has 32 GPUs free now
			name: "required waits bound to every leaf",
			busy: full("node01", "node05", "node09", "node13"),
			job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: u, TresPerNode: u},
		},
		{
			name: "user constraint is kept",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "spine", Features: "bigmem"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "(bigmem)&[gt_spine1|gt_spine2]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Domain: "leaf1", Shape: "2x8"},
		},
		{
			// node02 has 6 of 8 busy: the 1-GPU job fills that hole, and the
			// whole free nodes are excluded so Slurm does not break one
			name: "small job fills a hole and keeps whole nodes whole",
			busy: with(full("node01", "node03", "node04"), "node02", 6),
			job:  Job{TresPerJob: "gres:gpu:1"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: u, Prefer: u, ExcNodes: "node[05-16]",
				TresPerJob: u, TresPerNode: u, Domain: "node02/nvl0"},
		},
		{
			name: "impossible size is refused with what would work",
			busy: map[string]int{},
			job:  Job{TresPerJob: "gres:gpu:64", GangTopology: "leaf"},
			want: rewrite{Action: Reject, Verdict: VerdictRefused, Features: u, Prefer: u, ExcNodes: u, TresPerJob: u, TresPerNode: u,
				ErrMsg: "gangtopo: 64 GPUs can never fit in one leaf: the largest (leaf1) holds 32; use --gang-topology=spine, or ask for at most 32 GPUs"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gateFixture(t, nil, tc.busy)
			got := summarize(g.Submit(tc.job, time.Now()))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
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

func TestSubmitScope(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		job  Job
		want Action
		log  bool
	}{
		{"no GPUs", nil, Job{MinCPUs: 4}, Keep, false},
		{"gang scope skips jobs without the option", func(c *Config) { c.Jobs = ScopeGang }, Job{TresPerJob: "gres:gpu:2"}, Keep, false},
		{"gpu scope takes them", nil, Job{TresPerJob: "gres:gpu:2"}, Modify, true},
		{"partition outside the configured ones", func(c *Config) { c.Partitions = []string{"train"} }, Job{TresPerJob: "gres:gpu:2", Partition: "debug"}, Keep, false},
		{"partition outside the topology", nil, Job{TresPerJob: "gres:gpu:2", Partition: "cpu"}, Keep, true},
		{"gpus per socket", nil, Job{TresPerSocket: "gres:gpu:1", GangTopology: "leaf"}, Keep, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gateFixture(t, tc.edit, map[string]int{})
			got := g.Submit(tc.job, time.Now())
			if got.Action != tc.want || (got.Log != "") != tc.log {
				t.Errorf("action %v, log %q; want action %v, log %v", got.Action, got.Log, tc.want, tc.log)
			}
		})
	}
}

// Internal failures leave the job as submitted (on_failure: open) or refuse
// it (closed), with one log line; the gate keeps working afterwards.
func TestSubmitFailures(t *testing.T) {
	gang := Job{Name: "j", TresPerJob: "gres:gpu:16", GangTopology: "leaf"}
	tests := []struct {
		name    string
		busy    map[string]int // nil: no snapshot file
		hook    func(Job)
		closed  bool
		wantLog string
	}{
		{"no snapshot", nil, nil, false, "snapshot not loaded yet"},
		{"no snapshot, fail closed", nil, nil, true, "snapshot not loaded yet"},
		{"engine panic", map[string]int{}, func(Job) { panic("boom") }, false, "placement engine panicked: boom"},
		{"engine panic, fail closed", map[string]int{}, func(Job) { panic("boom") }, true, "placement engine panicked: boom"},
		{"deadline", map[string]int{}, func(Job) { time.Sleep(300 * time.Millisecond) }, false, "placement took longer than the 50ms deadline"},
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
				defer func() { faultHook = func(Job) {} }()
			}
			got := g.Submit(gang, time.Now())
			want := Keep
			if tc.closed {
				want = Reject
			}
			if got.Action != want || got.LogLevel != LogError || !strings.Contains(got.Log, tc.wantLog) {
				t.Fatalf("got action %v, level %v, log %q; want action %v and an error log with %q", got.Action, got.LogLevel, got.Log, want, tc.wantLog)
			}
			if tc.closed && !strings.Contains(got.ErrMsg, "placement is unavailable") {
				t.Errorf("fail-closed message %q", got.ErrMsg)
			}
			if tc.busy == nil {
				return
			}
			faultHook = func(Job) {}
			if again := g.Submit(gang, time.Now()); again.Action != Modify {
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
	first := g.Submit(Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"}, now)
	second := g.Submit(Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"}, now)
	if first.Decision.Domain == "" || first.Decision.Domain == second.Decision.Domain {
		t.Errorf("both gangs went to %q and %q", first.Decision.Domain, second.Decision.Domain)
	}
}
