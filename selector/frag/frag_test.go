package frag

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestNodeAmount(t *testing.T) {
	w := Workload{Node: []NodeShape{
		{GPUs: 1, Milli: 1000, CPUMilli: 1000, Weight: 0.5},
		{GPUs: 1, Milli: 600, CPUMilli: 1000, Weight: 0.3},
		{CPUMilli: 1000, Weight: 0.2}, // CPU-only
	}}
	tests := []struct {
		name    string
		free    []uint16
		cpuLeft int64
		want    float64
	}{
		// idle 2500. whole: fits, loses the 500 GPU -> 0.5*500; 600-milli:
		// fits, loses the 500 -> 0.3*500; CPU-only loses all -> 0.2*2500.
		{"mixed shares", []uint16{1000, 0, 500, 1000}, 8000, 250 + 150 + 500},
		// No CPU left: no GPU shape fits, every shape loses all 2000 idle.
		{"no cpu", []uint16{1000, 1000, 0, 0}, 0, 2000},
		// Only 400 free: neither GPU shape fits; everything is fragment.
		{"tiny share", []uint16{400, 0, 0, 0}, 8000, 400},
		{"full", []uint16{0, 0, 0, 0}, 8000, 0},
		// All free: GPU shapes lose nothing, CPU-only loses 0.2*4000.
		{"empty node", []uint16{1000, 1000, 1000, 1000}, 8000, 800},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NodeAmount(tc.free, tc.cpuLeft, 1, &w)
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("NodeAmount = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestNodeAmountModels(t *testing.T) {
	// A shape that needs model 1 cannot use a node of model 0: all idle is lost.
	w := Workload{Node: []NodeShape{{GPUs: 1, Milli: 1000, Models: topology.ModelSet(0).With(1), Weight: 1}}}
	if got := NodeAmount([]uint16{1000, 1000}, 1000, topology.ModelSet(0).With(0), &w); got != 2000 {
		t.Errorf("wrong model: NodeAmount = %g, want 2000", got)
	}
	if got := NodeAmount([]uint16{1000, 1000}, 1000, topology.ModelSet(0).With(1), &w); got != 0 {
		t.Errorf("right model: NodeAmount = %g, want 0", got)
	}
}

func TestTypical(t *testing.T) {
	a := NodeShape{GPUs: 1, Milli: 1000}
	b := NodeShape{GPUs: 1, Milli: 500}
	c := NodeShape{GPUs: 2, Milli: 1000}
	obs := []NodeShape{b, a, a, b, a, c}
	// counts a=3, b=2, c=1: a alone covers 50%, a+b 83%, all 100%.
	tests := []struct {
		coverage float64
		want     []NodeShape
	}{
		{0.95, []NodeShape{withW(a, 0.5), withW(b, 2.0/6), withW(c, 1.0/6)}},
		{0.80, []NodeShape{withW(a, 0.6), withW(b, 0.4)}},
		{0.50, []NodeShape{withW(a, 1)}},
	}
	for _, tc := range tests {
		got := Typical(obs, tc.coverage)
		if diff := cmp.Diff(tc.want, got.Node, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })); diff != "" {
			t.Errorf("Typical(%g) (-want +got):\n%s", tc.coverage, diff)
		}
	}
}

func withW(s NodeShape, w float64) NodeShape { s.Weight = w; return s }

func TestGangAmount(t *testing.T) {
	g := GangShape{Nodes: 2, Tier: topology.TierLeaf, Weight: 1}
	// 3 whole 8-GPU nodes + 3 idle GPUs elsewhere = 27 GPUs idle; one
	// 2-node gang fits (16 GPUs), 11 GPUs are unusable for it.
	if got := GangAmount(DomainStats{IdleMilli: 27000, WholeNodes: 3, WholeMilli: 24000, GPUsPerNode: 8}, &g); got != 11000 {
		t.Errorf("GangAmount = %g, want 11000", got)
	}
	// a mixed leaf: whole free nodes of 8, 2 and 2 GPUs (12 idle GPUs), the
	// largest node 8: counted at 8 a node, one 2-node gang would use 16 of
	// the 12 idle GPUs (-4, as frag reported -0.4 GPUs on hetero.yaml); it
	// uses at most the 12 the whole nodes hold
	if got := GangAmount(DomainStats{IdleMilli: 12000, WholeNodes: 3, WholeMilli: 12000, GPUsPerNode: 8}, &g); got != 0 {
		t.Errorf("GangAmount of a mixed leaf = %g, want 0", got)
	}
}

// Three whole nodes in one leaf are worth more than three whole nodes in
// three leaves when 3-node gangs are typical: the meter must say so.
func TestMeterPrefersWholeLeaves(t *testing.T) {
	c := topotest.Lab16()
	w := Workload{
		Node:  []NodeShape{{GPUs: 1, Milli: 1000, Weight: 0.5}},
		Gangs: []GangShape{{Nodes: 3, Tier: topology.TierLeaf, Weight: 0.5}},
	}
	m := NewMeter(c, &w)
	fill := func(names ...string) *occupancy.Snapshot {
		s := occupancy.New(c)
		for _, name := range names {
			id, _ := c.NodeByName(name)
			if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000}}}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	// Both snapshots have 3 whole free nodes. Together: leaf4 (node13-15).
	together := fill("node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08", "node09", "node10", "node11", "node12", "node16")
	// Scattered: node04 (leaf1), node08 (leaf2), node12 (leaf3).
	scattered := fill("node01", "node02", "node03", "node05", "node06", "node07", "node09", "node10", "node11", "node13", "node14", "node15", "node16")
	ft, fs := m.Total(together), m.Total(scattered)
	// Together: leaf4 fits one gang, nothing lost: 0. Scattered: each leaf
	// has 8 idle GPUs it cannot use: 0.5 * 3 * 8000 = 12000.
	if ft != 0 || fs != 12000 {
		t.Errorf("Total(together) = %g, Total(scattered) = %g; want 0 and 12000", ft, fs)
	}
}

func TestMeterCacheMatchesDirect(t *testing.T) {
	c := topotest.Lab16()
	w := PhillyPrior(1)
	m := NewMeter(c, &w)
	s := occupancy.New(c)
	id, _ := c.NodeByName("node07")
	s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: []int{1, 2, 5}, Milli: 1000, CPUMilli: 3000}}})
	for i := 0; i < 2; i++ { // second pass hits the cache
		got := m.Node(s, id)
		want := NodeAmount(s.NodeFree(id), int64(s.FreeCPUMilli[id]), c.Nodes[id].Models, &w)
		if got != want {
			t.Fatalf("pass %d: Meter.Node = %g, NodeAmount = %g", i, got, want)
		}
	}
	after := []uint16{1000, 0, 0, 1000, 1000, 0, 1000, 1000}
	if m.NodeAfter(id, after, s.FreeCPUMilli[id]) != m.Node(s, id) {
		t.Error("NodeAfter of the same state differs from Node")
	}
}

// Equal counts are ordered as FGD orders them, which decides which shapes
// make the cut.
func TestTypicalTies(t *testing.T) {
	big := NodeShape{GPUs: 1, Milli: 1000, CPUMilli: 8000}
	small := NodeShape{GPUs: 1, Milli: 1000, CPUMilli: 4000}
	share := NodeShape{GPUs: 1, Milli: 500, CPUMilli: 8000}
	t4 := NodeShape{GPUs: 1, Milli: 1000, CPUMilli: 4000, Models: 1, Spec: "T4"}
	t4t4 := NodeShape{GPUs: 1, Milli: 1000, CPUMilli: 4000, Models: 1, Spec: "T4|T4"}
	cmpW := cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })
	tests := []struct {
		name     string
		obs      []NodeShape
		coverage float64
		want     []NodeShape
	}{
		// One of each: 50% needs one shape; FGD keeps the one with more CPU,
		// whatever the order of observation.
		{"cpu decides", []NodeShape{small, big}, 0.5, []NodeShape{withW(big, 1)}},
		// Same CPU: the larger share wins.
		{"share decides", []NodeShape{share, big}, 0.5, []NodeShape{withW(big, 1)}},
		// Spec keeps two texts of one constraint apart: "T4|T4" > "T4".
		{"spec decides", []NodeShape{t4, t4t4}, 0.5, []NodeShape{withW(t4t4, 1)}},
		// 95% of 20 observations is exactly 19: a shape covering 19 is enough.
		{"exact boundary", append(repeat(big, 19), small), 0.95, []NodeShape{withW(big, 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Typical(tc.obs, tc.coverage)
			if diff := cmp.Diff(tc.want, got.Node, cmpW); diff != "" {
				t.Errorf("Typical (-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(s NodeShape, n int) []NodeShape {
	out := make([]NodeShape, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// NodeAmount adds per FGD class, then sums the classes: with these weights
// the direct running sum differs in the last bit, and the FGD score, which
// truncates, can tell.
func TestNodeAmountFGDArithmetic(t *testing.T) {
	a := NodeShape{GPUs: 1, Milli: 500, CPUMilli: 1000, Weight: 0.1}
	b := NodeShape{CPUMilli: 1000, Weight: 0.3} // CPU-only: all idle is lost
	c := NodeShape{GPUs: 1, Milli: 900, CPUMilli: 1000, Weight: 1.0 / 3}
	w := Workload{Node: []NodeShape{a, b, c}}
	free := []uint16{200, 450, 1000, 1000}
	// a fits and loses the 200 and 450 GPUs (650); c fits and loses them
	// too (650); b loses all 2650. FGD: Q2 = a + c, then XL = b.
	la, lb, lc := a.Weight*650, b.Weight*2650, c.Weight*650 // float64, not constants
	want := (la + lc) + lb
	direct := (la + lb) + lc
	if want == direct {
		t.Fatal("test weights no longer separate the two orders")
	}
	if got := NodeAmount(free, 8000, 1, &w); got != want {
		t.Errorf("NodeAmount = %v, want FGD's %v (the running sum gives %v)", got, want, direct)
	}
}

// BenchmarkNodeAmount: FGD's F_n(M) for an 8-GPU node and the Philly prior.
func BenchmarkNodeAmount(b *testing.B) {
	w := PhillyPrior(1)
	free := []uint16{1000, 0, 500, 1000, 0, 0, 1000, 250}
	b.ReportAllocs()
	for b.Loop() {
		NodeAmount(free, 20000, 1, &w)
	}
}

func TestFillModel(t *testing.T) {
	w := Workload{Node: []NodeShape{
		{GPUs: 1, Milli: 500, CPUMilli: 2000, Weight: 0.5},
		{GPUs: 1, Milli: 1000, CPUMilli: 4000, Weight: 0.5},
	}}
	f := NewFillModel(&w, 0)
	tests := []struct {
		free int
		want float64
	}{
		{0, 0},
		{499, 499}, // nothing fits
		{600, 100}, // one share, then 100 is left
		{999, 499}, // one share, then 499
		{1000, 0},  // a whole job or two shares
	}
	for _, tc := range tests {
		if got := f.Waste[tc.free]; got != tc.want {
			t.Errorf("Waste[%d] = %g, want %g", tc.free, got, tc.want)
		}
	}
	// c = (0.5*2000 + 0.5*4000) / (0.5*500 + 0.5*1000) = 4 milli-CPUs per milli-GPU.
	if f.CPUPerMilli != 4 {
		t.Errorf("CPUPerMilli = %g, want 4", f.CPUPerMilli)
	}
	// [1000, 600]: waste 0 + 100; the 1500 milli that would be used need
	// 6000 milli-CPUs. With 2000 free only 500 can be fed: 1000 stranded.
	free := []uint16{1000, 600}
	if got := f.NodeWaste(free, 6000); got != 100 {
		t.Errorf("NodeWaste with enough CPU = %g, want 100", got)
	}
	if got := f.NodeWaste(free, 2000); got != 1100 {
		t.Errorf("NodeWaste short of CPU = %g, want 1100", got)
	}
}

// A shape restricted to another model does not fill this model's GPUs.
func TestFillModelModels(t *testing.T) {
	w := Workload{Node: []NodeShape{
		{GPUs: 1, Milli: 1000, Weight: 0.5, Models: topology.ModelSet(0).With(1)},
		{GPUs: 1, Milli: 300, Weight: 0.5},
	}}
	// On model 0 only the 300 share fills: 1000 -> 700 -> 400 -> 100.
	if got := NewFillModel(&w, topology.ModelSet(0).With(0)).Waste[1000]; got != 100 {
		t.Errorf("Waste[1000] on model 0 = %g, want 100", got)
	}
	// On model 1 a whole job may come: (0.5*0 + 0.5*Waste[700]) = 0.5*100 = 50.
	if got := NewFillModel(&w, topology.ModelSet(0).With(1)).Waste[1000]; got != 50 {
		t.Errorf("Waste[1000] on model 1 = %g, want 50", got)
	}
	// Half the typical jobs may not use model 0. Unlike FGD, that costs
	// model 0 nothing: they never come there, and the 300 shares fill it
	// as before. [1000]: Waste[1000] = 100, no CPU asked.
	if got := NewFillModel(&w, topology.ModelSet(0).With(0)).NodeWaste([]uint16{1000}, 0); got != 100 {
		t.Errorf("NodeWaste on model 0 = %g, want 100", got)
	}
}
