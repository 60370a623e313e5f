package jobsubmit

import (
	"strings"
	"testing"
)

func TestWholeNodeGangs(t *testing.T) {
	// leaf1 = node01-04: node01 and node02 half used, node03 and node04
	// whole free; leaf2 = node05-08: every node half used (16 GPUs free,
	// no whole node); leaves 3 and 4 full.
	half := map[string]int{"node01": 4, "node02": 4, "node05": 4, "node06": 4, "node07": 4, "node08": 4}
	busy := func(extra ...string) map[string]int {
		m := full(append([]string{"node09", "node10", "node11", "node12", "node13", "node14", "node15", "node16"}, extra...)...)
		for n, k := range half {
			if _, taken := m[n]; !taken {
				m[n] = k
			}
		}
		return m
	}
	tests := []struct {
		name  string
		whole bool
		busy  map[string]int
		job   Job
		want  rewrite
	}{
		{
			name:  "off: 16 GPUs start over the halves of leaf2",
			whole: false,
			busy:  busy("node03", "node04"),
			job:   Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf2|gt_leaf1|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:4", MinNodes: 4, MaxNodes: 4, Domain: "leaf2", Shape: "4x4"},
		},
		{
			name:  "on: 16 GPUs take the two whole nodes of leaf1",
			whole: true,
			busy:  busy(),
			job:   Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictPlaced, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Domain: "leaf1", Shape: "2x8"},
		},
		{
			name:  "on: no two whole nodes in a leaf: waits for them, shape written",
			whole: true,
			busy:  busy("node03"),
			job:   Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf"},
			want: rewrite{Action: Modify, Verdict: VerdictWaiting, Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]", Prefer: u, ExcNodes: u,
				TresPerJob: "", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, Shape: "2x8"},
		},
	}
	// jobs the option leaves alone: the same rewrite with it as without,
	// where it would matter (no leaf has two whole nodes: node03 taken)
	same := []struct {
		name string
		job  Job
	}{
		{"not a multiple of a node's GPUs", Job{TresPerJob: "gres:gpu:12", GangTopology: "leaf"}},
		{"the user's own GPUs per node", Job{TresPerNode: "gres:gpu:4", MinNodes: 4, MaxNodes: 4, GangTopology: "leaf"}},
		{"one node's worth", Job{TresPerJob: "gres:gpu:8", GangTopology: "leaf"}},
		{"an array", Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf", ArrayInx: "0-3%2"}},
		{"the user's own GPUs per task", Job{TresPerTask: "gres:gpu:2", NumTasks: 8, GangTopology: "leaf"}},
	}
	for _, tc := range same {
		t.Run("on leaves alone: "+tc.name, func(t *testing.T) {
			on, s := decideFixture(t, func(p *Policy) { p.WholeNodeGangs = true }, busy("node03"))
			off, s2 := decideFixture(t, nil, busy("node03"))
			got, want := summarize(decide(t, on, s, tc.job)), summarize(decide(t, off, s2, tc.job))
			if got != want {
				t.Errorf("\non  %+v\noff %+v", got, want)
			}
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, func(p *Policy) { p.WholeNodeGangs = tc.whole }, tc.busy)
			got := summarize(decide(t, d, s, tc.job))
			if got != tc.want {
				t.Errorf("\ngot  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestWholeNodeGangRebind: the controller leaves a gang waiting for two
// whole nodes alone while only spread room exists (a re-binding would
// undo the shape the plugin gave it), and finds it able to start inside
// its binding, on two whole nodes, once a leaf frees them.
func TestWholeNodeGangRebind(t *testing.T) {
	on := func(p *Policy) { p.WholeNodeGangs = true }
	halves := map[string]int{}
	for _, n := range allNodes() {
		halves[n] = 4
	}
	d, now, dec := submitted(t, on, halves, Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf"})
	if dec.Verdict != VerdictWaiting || dec.Shape != "2x8" || now.MinNodes != 2 || len(dec.Bound) != 4 {
		t.Fatalf("at submit: %s shape %q, %d nodes, bound to %v; want waiting as 2x8, bound to the four leaves", dec.Verdict, dec.Shape, now.MinNodes, dec.Bound)
	}
	if r := rebind(t, d, now, dec, snapshotOf(t, d, halves)); r.Stale || !strings.Contains(r.Why, "a new decision would not start it now either") {
		t.Errorf("halves only: stale %v (%s); want left waiting for whole nodes", r.Stale, r.Why)
	}
	freed := map[string]int{}
	for n, k := range halves {
		if n != "node09" && n != "node10" {
			freed[n] = k
		}
	}
	r := rebind(t, d, now, dec, snapshotOf(t, d, freed))
	if r.Stale || !strings.Contains(r.Why, "it can start inside its binding now") || len(r.Tasks) != 1 || len(r.Tasks[0].Nodes) != 2 {
		t.Errorf("node09 and node10 free: stale %v (%s), starts on %+v; want it to start inside its binding on two nodes", r.Stale, r.Why, r.Tasks)
	}
}
