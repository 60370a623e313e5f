package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// submitted decides about j on a Lab16 snapshot with `busy` in use (nodes
// carrying their features) and returns the job as Slurm then holds it,
// with its decision.
func submitted(t *testing.T, edit func(*Policy), busy map[string]int, j Job) (*Decider, Job, Decision) {
	t.Helper()
	d, s := decideFixture(t, edit, busy)
	withFeatures(t, s)
	res := decide(t, d, s, j)
	if res.Action != Modify {
		t.Fatalf("submit: %v (%s)", res.Action, res.Log)
	}
	return d, res.Apply(j), res.Decision
}

// snapshotOf is a snapshot of d's cluster with busy in use (node name ->
// GPUs, the lowest indices) and the features gen features writes.
func snapshotOf(t *testing.T, d *Decider, busy map[string]int) *occupancy.Snapshot {
	t.Helper()
	c := d.Cluster()
	s := occupancy.New(c)
	for name, k := range busy {
		id, ok := c.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		var gpus []int
		for i := 0; i < k; i++ {
			gpus = append(gpus, i)
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	withFeatures(t, s)
	return s
}

func rebind(t *testing.T, d *Decider, now Job, dec Decision, s *occupancy.Snapshot) Rebinding {
	t.Helper()
	return d.Rebind(now, dec, s, place.New(d.Cluster(), d.Policy().EngineOptions(nil)), 9)
}

func TestRebindOneNodeJob(t *testing.T) {
	// at submit node02 has a hole of 2 GPUs and node06 one of 3: a 2-GPU
	// job is bound to node02 first, then node06, then whole nodes
	atSubmit := with(with(full("node01", "node03", "node04"), "node02", 6), "node06", 5)
	d, now, dec := submitted(t, nil, atSubmit, Job{TresPerJob: "gres:gpu:2", Name: "small"})
	if dec.Bound[0] != "node02" || len(dec.Bound) != 8 {
		t.Fatalf("bound to %v at submit", dec.Bound)
	}

	tests := []struct {
		name     string
		busy     map[string]int
		stale    bool
		why      string
		features string // the update's, when stale
		inside   string // the node it starts on inside its binding, when it can
	}{
		{name: "its first node still has room", busy: atSubmit, why: "it can start inside its binding now", inside: "node02"},
		{name: "a later bound node has room", busy: with(full(dec.Bound[:7]...), dec.Bound[7], 0),
			why: "it can start inside its binding now", inside: dec.Bound[7]},
		{name: "every node is full", busy: full(allNodes()...), why: "a new decision would not start it now either (waiting: "},
		// every bound node full, node12 has 2 free: the new binding
		// starts with node12's hole, then the whole nodes left
		{name: "bound nodes full, another has room", busy: with(full(append(dec.Bound, "node01", "node03", "node04")...), "node12", 6),
			stale: true, why: "it cannot start inside its binding now, and a new decision starts it",
			features: "[gt_node12|gt_node13|gt_node14|gt_node15|gt_node16]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rb := rebind(t, d, now, dec, snapshotOf(t, d, tc.busy))
			if rb.Stale != tc.stale || !strings.HasPrefix(rb.Why, tc.why) {
				t.Fatalf("stale %v (%s), want %v (%s)", rb.Stale, rb.Why, tc.stale, tc.why)
			}
			if !tc.stale {
				// where it starts inside its binding, for the controller
				// to hold from the jobs after it
				if tc.inside == "" && len(rb.Tasks) != 0 ||
					tc.inside != "" && (len(rb.Tasks) != 1 || d.Cluster().Nodes[rb.Tasks[0].Nodes[0].Node].Name != tc.inside) {
					t.Errorf("tasks %+v, want one on %q", rb.Tasks, tc.inside)
				}
				return
			}
			if rb.Update.Features == nil || *rb.Update.Features != tc.features {
				t.Errorf("update %s, want Features=%s", rb.Update, tc.features)
			}
			if rb.Update.AdminComment == nil || !strings.HasPrefix(*rb.Update.AdminComment, "gangtopo v1 placed ") ||
				!strings.Contains(*rb.Update.AdminComment, "snapshot=9") {
				t.Errorf("new decision line %v", rb.Update.AdminComment)
			}
			if len(rb.Tasks) != 1 || d.Cluster().Nodes[rb.Tasks[0].Nodes[0].Node].Name != "node12" {
				t.Errorf("new placement %+v, want node12", rb.Tasks)
			}
		})
	}
}

// A preferred leaf gang bound to the leaves that could hold it waits when
// none has room; a new decision lets it start wider.
func TestRebindPreferredGangGoesWider(t *testing.T) {
	d, now, dec := submitted(t, nil, map[string]int{}, Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf:preferred", Name: "g"})
	if now.Features != "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]" || dec.Shape != "2x8" {
		t.Fatalf("at submit: features %q, decision %q", now.Features, dec)
	}
	// three nodes busy in every leaf: 8 GPUs free per leaf, 32 in all
	busy := full("node01", "node02", "node03", "node05", "node06", "node07", "node09", "node10", "node11", "node13", "node14", "node15")
	rb := rebind(t, d, now, dec, snapshotOf(t, d, busy))
	if !rb.Stale || rb.Result.Decision.Verdict != VerdictWider {
		t.Fatalf("stale %v (%s), decision %q; want stale, wider", rb.Stale, rb.Why, rb.Result.Decision)
	}
	want := []string{"Features=", "AdminComment=" + rb.Result.Decision.String()}
	if diff := cmp.Diff(want, rb.Update.Args()); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
}

// A required gang stays bound: the new decision would make it wait too.
func TestRebindRequiredGangWaits(t *testing.T) {
	d, now, dec := submitted(t, nil, map[string]int{}, Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf", Name: "g"})
	busy := full("node01", "node02", "node03", "node05", "node06", "node07", "node09", "node10", "node11", "node13", "node14", "node15")
	rb := rebind(t, d, now, dec, snapshotOf(t, d, busy))
	if rb.Stale || !strings.HasPrefix(rb.Why, "a new decision would not start it now either (waiting: no leaf has room") {
		t.Errorf("stale %v (%s)", rb.Stale, rb.Why)
	}
}

// A binding that can never hold the job (its user raised the GPU count
// past a node) is replaced even when the new decision has to wait.
func TestRebindBindingThatCanNeverHold(t *testing.T) {
	d, now, dec := submitted(t, nil, map[string]int{"node02": 6}, Job{TresPerJob: "gres:gpu:2", Name: "small"})
	now.TresPerJob, now.MinNodes, now.MaxNodes = "gres:gpu:16", 2, 2 // scontrol update by its user
	rb := rebind(t, d, now, dec, snapshotOf(t, d, full(allNodes()...)))
	if !rb.Stale || rb.Why != "its binding can never hold it" || rb.Update.Features == nil || *rb.Update.Features != "" {
		t.Errorf("stale %v (%s), update %s; want the node binding taken out", rb.Stale, rb.Why, rb.Update)
	}
}

func TestRebindLeavesChangedFeaturesAlone(t *testing.T) {
	d, now, dec := submitted(t, nil, map[string]int{"node02": 6}, Job{TresPerJob: "gres:gpu:2", Name: "small"})
	now.Features = "gt_h100"
	rb := rebind(t, d, now, dec, snapshotOf(t, d, full(allNodes()...)))
	if rb.Stale || !strings.Contains(rb.Why, "no longer end with gangtopo's binding") {
		t.Errorf("stale %v (%s)", rb.Stale, rb.Why)
	}
}

func TestOriginal(t *testing.T) {
	tests := []struct {
		name string
		now  Job
		dec  Decision
		want Job
		err  string
	}{
		{name: "features, exclusions, shape and decision taken out",
			now: Job{Features: "(gt_h100)&[gt_leaf2|gt_leaf1]", ExcNodes: "node[05-09]", TresPerNode: "gres:gpu:h100:8", MinNodes: 4, MaxNodes: 4,
				AdminComment: "lua: x | gangtopo v1 placed request=leaf:required gpus=32 shape=4x8 bound=leaf2,leaf1"},
			dec:  Decision{Verdict: VerdictPlaced, Request: "leaf:required", GPUs: 32, Shape: "4x8", Bound: []string{"leaf2", "leaf1"}, Excluded: "node[06-08]"},
			want: Job{Features: "gt_h100", ExcNodes: "node[05,09]", TresPerJob: "gres:gpu:h100:32", AdminComment: "lua: x", GangTopology: "leaf:required"}},
		{name: "only gangtopo's features",
			now:  Job{Features: "[gt_node02|gt_node06]", MinNodes: 1, MaxNodes: 1, AdminComment: "gangtopo v1 placed gpus=2 bound=node02,node06"},
			dec:  Decision{Verdict: VerdictPlaced, GPUs: 2, Bound: []string{"node02", "node06"}},
			want: Job{MinNodes: 1, MaxNodes: 1}},
		{name: "features changed since",
			now: Job{Features: "gt_h100"}, dec: Decision{Verdict: VerdictPlaced, Bound: []string{"node02"}},
			err: `its features "gt_h100" no longer end with gangtopo's binding to node02`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Original(tc.now, tc.dec, DefaultFeaturePrefix)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Errorf("error %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithBinding(t *testing.T) {
	ours := "[gt_leaf1|gt_leaf2]"
	for _, tc := range []struct{ user, want string }{
		{"", ours},
		{"gt_h100", "(gt_h100)&" + ours},
		{"(gt_h100)&" + ours, "(gt_h100)&" + ours}, // already there: once
		{ours, ours},
		{"a|b", "(a|b)&" + ours},
	} {
		if got := WithBinding(tc.user, ours); got != tc.want {
			t.Errorf("WithBinding(%q) = %q, want %q", tc.user, got, tc.want)
		}
	}
}

func allNodes() []string {
	var out []string
	for i := 1; i <= 16; i++ {
		out = append(out, "node"+string(rune('0'+i/10))+string(rune('0'+i%10)))
	}
	return out
}

// The update towards a new rewrite, carried out as the controller's
// scontrol update does: what want changes, a shape set earlier kept.
func TestUpdateApply(t *testing.T) {
	tests := []struct {
		name      string
		now, want Job
		changed   bool
		got       Job
	}{
		{name: "a waiting job kept on one node stays there when the new decision leaves it free",
			now:  Job{TresPerJob: "gres:gpu:4", MinNodes: 1, MaxNodes: 1},
			want: Job{TresPerJob: "gres:gpu:4"},
			got:  Job{TresPerJob: "gres:gpu:4", MinNodes: 1, MaxNodes: 1}},
		{name: "a leaf binding taken out",
			now:     Job{TresPerJob: "gres:gpu:16", Features: "[gt_leaf1|gt_leaf2]", AdminComment: "old"},
			want:    Job{TresPerJob: "gres:gpu:16", AdminComment: "new"},
			changed: true, got: Job{TresPerJob: "gres:gpu:16", AdminComment: "new"}},
		// 2x4 (8 GPUs) made -N 1: --gpus-per-node=4 on one node would be
		// 4 GPUs, so the TRES goes back to --gpus=8 with the node count
		{name: "a shape made one node takes its TRES along",
			now:     Job{TresPerNode: "gres:gpu:4", MinNodes: 2, MaxNodes: 2},
			want:    Job{TresPerJob: "gres:gpu:8", MinNodes: 1, MaxNodes: 1, Features: "[gt_node03|gt_node04]"},
			changed: true, got: Job{TresPerJob: "gres:gpu:8", MinNodes: 1, MaxNodes: 1, Features: "[gt_node03|gt_node04]"}},
		{name: "one node to a new shape",
			now:     Job{TresPerJob: "gres:gpu:16", MinNodes: 1, MaxNodes: 1},
			want:    Job{TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2},
			changed: true, got: Job{TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := diff(tc.now, tc.want)
			got, changed := u.Apply(tc.now), !u.Empty()
			if changed != tc.changed {
				t.Errorf("changed %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.got, got); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
}
