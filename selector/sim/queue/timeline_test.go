package queue

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/place"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

var inf = math.Inf(-1)

// One spine, leaves A (nodes 0, 1) and B (nodes 2, 3), 8 GPUs a node.
// a holds 4 GPUs of node 0 over 0-100; b ran 8 GPUs on node 2 over 10-20,
// was requeued, and ran on node 1 over 50-150; c holds nodes 2 and 3 over
// 100-200; d never ran.
func TestFreeWhole(t *testing.T) {
	c := topotest.FatTree(1, 2, 2, topotest.DGXH100)
	nan := math.NaN()
	r := &Result{GPUs: 32, Jobs: make([]Job, 4), Outcomes: []Outcome{
		{Start: 0, End: 100, Used: []NodeGPUs{{0, 4}}},
		{Start: 50, End: 150, Used: []NodeGPUs{{1, 8}}},
		{Start: 100, End: 200, Used: []NodeGPUs{{2, 8}, {3, 8}}},
		{Start: nan, End: nan},
	}, Requeues: []Requeue{{Job: 1, Start: 10, At: 20, GPUs: 8, Used: []NodeGPUs{{2, 8}}}}}
	nodes, leaves := FreeWhole(r, c)
	wantNodes := []Step{
		{inf, 4},
		{0, 3},   // a on node 0
		{10, 2},  // b on node 2
		{20, 3},  // b requeued
		{50, 2},  // b on node 1
		{100, 1}, // a ends (node 0 free), c takes nodes 2 and 3
		{150, 2}, // b ends
		{200, 4}, // c ends
	}
	wantLeaves := []Step{
		{inf, 2},
		{0, 1},   // A holds a
		{10, 0},  // B holds b
		{20, 1},  // B free again
		{50, 1},  // A still busy (b joins a there)
		{100, 0}, // A holds b, B holds c
		{150, 1}, // A free
		{200, 2},
	}
	if diff := cmp.Diff(wantNodes, nodes); diff != "" {
		t.Errorf("free whole nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantLeaves, leaves); diff != "" {
		t.Errorf("free whole leaves (-want +got):\n%s", diff)
	}
	// over 0-200: 3x10 + 2x10 + 3x30 + 2x50 + 1x50 + 2x50 = 390 node-s
	if got := Integrate(nodes, 0, 200); got != 390 {
		t.Errorf("integral of free nodes over 0-200 = %g, want 390", got)
	}
	// halves: (30+20+90+100)/100 = 2.4, (50+100)/100 = 1.5
	if diff := cmp.Diff([]float64{2.4, 1.5}, BinMeans(nodes, 0, 200, 2)); diff != "" {
		t.Errorf("bin means (-want +got):\n%s", diff)
	}
	// before the first event, the empty cluster: 4 nodes over -20-0;
	// after the last, 4 again
	if diff := cmp.Diff([]float64{4, 4}, BinMeans(nodes, -20, 0, 2)); diff != "" {
		t.Errorf("bin means before the first run (-want +got):\n%s", diff)
	}
	if got := BinMeans(nodes, 200, 300, 1)[0]; got != 4 {
		t.Errorf("mean after the last run = %g, want 4", got)
	}
}

// A node is whole only with every GPU free: two 4-GPU jobs on one 8-GPU
// node, over 0-10 and 5-15, keep it (and its leaf) busy over 0-15.
func TestFreeWholeSharedNode(t *testing.T) {
	c := topotest.SingleNode(topotest.DGXH100("n"))
	r := &Result{GPUs: 8, Jobs: make([]Job, 2), Outcomes: []Outcome{
		{Start: 0, End: 10, Used: []NodeGPUs{{0, 4}}},
		{Start: 5, End: 15, Used: []NodeGPUs{{0, 4}}},
	}}
	nodes, leaves := FreeWhole(r, c)
	want := []Step{{inf, 1}, {0, 0}, {5, 0}, {10, 0}, {15, 1}}
	if diff := cmp.Diff(want, nodes); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, leaves); diff != "" {
		t.Errorf("leaves (-want +got):\n%s", diff)
	}
}

// The stranded GPUs at each moment, on TestStrandedGPUHours's first case:
// 0-50 b (4) waits while 4 GPUs are free; then no one waits.
func TestStrandedSteps(t *testing.T) {
	r := &Result{GPUs: 8, Jobs: []Job{{Submit: 0, GPUs: 4}, {Submit: 0, GPUs: 4}, {Submit: 200, GPUs: 8}},
		Outcomes: []Outcome{{Start: 0, End: 100}, {Start: 50, End: 150}, {Start: 200, End: 210}}}
	want := []Step{{inf, 0}, {0, 4}, {50, 0}, {100, 0}, {150, 0}, {200, 0}, {210, 0}}
	if diff := cmp.Diff(want, StrandedSteps(r)); diff != "" {
		t.Errorf("stranded steps (-want +got):\n%s", diff)
	}
}

// A replay keeps each run's nodes only when asked (Config.RecordUse), and
// FreeWhole refuses a result without them rather than read every node
// free.
func TestRecordUse(t *testing.T) {
	c := topotest.FatTree(1, 2, 2, topotest.DGXH100)
	jobs := []Job{{Name: "a", Submit: 0, Duration: 10, GPUs: 16}}
	for _, record := range []bool{false, true} {
		r, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), Config{Slowdown: NoSlowdown(), CPUsPerGPU: 1, RecordUse: record})
		if err != nil {
			t.Fatal(err)
		}
		if !record {
			if r.Outcomes[0].Used != nil {
				t.Errorf("Used kept without RecordUse: %v", r.Outcomes[0].Used)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("FreeWhole of a result without RecordUse did not panic")
					}
				}()
				FreeWhole(r, c)
			}()
			continue
		}
		// 16 GPUs: two whole nodes of one leaf over 0-10
		nodes, leaves := FreeWhole(r, c)
		if diff := cmp.Diff([]Step{{inf, 4}, {0, 2}, {10, 4}}, nodes); diff != "" {
			t.Errorf("nodes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]Step{{inf, 2}, {0, 1}, {10, 2}}, leaves); diff != "" {
			t.Errorf("leaves (-want +got):\n%s", diff)
		}
	}
}
