package place

import (
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// modelCluster has one 4-GPU node per model given, named a, b, c, ... in
// that node order.
func modelCluster(models ...string) *topology.Cluster {
	s := topology.Spec{Name: "models"}
	leaf := topology.LeafSpec{Name: "leaf1"}
	for i, m := range models {
		n := topotest.SmallGPUNode(string(rune('a'+i)), m, 4)
		s.Nodes = append(s.Nodes, n)
		leaf.Nodes = append(leaf.Nodes, n.Name)
	}
	s.Leaves = []topology.LeafSpec{leaf}
	return topotest.MustBuild(s)
}

// scarceCluster has 4 GPUs of a scarce model (node a, "t4") and 12 of a
// common one (nodes b-d, "g2").
func scarceCluster() *topology.Cluster { return modelCluster("t4", "g2", "g2", "g2") }

// whole is a 1-GPU whole-GPU shape of weight w on models ms (0: any).
func whole(w float64, ms topology.ModelSet) frag.NodeShape {
	return frag.NodeShape{GPUs: 1, Milli: 1000, Weight: w, Models: ms}
}

func TestScarcity(t *testing.T) {
	c := scarceCluster()
	t4, _ := c.ModelByName("t4")
	g2, _ := c.ModelByName("g2")
	onlyT4 := topology.ModelSet(0).With(t4)
	either := onlyT4.With(g2)
	for _, tc := range []struct {
		name         string
		shapes       []frag.NodeShape
		busy         []string
		wantT4, want float64 // rho of t4, of g2
	}{
		// Half of the demand is t4-only. Empty cluster: F = 16, F(t4) = 4,
		// rho_t4 = 0.5 x 16 / 4 = 2; nothing asks for g2 alone: 0.
		{"t4-only half the demand", []frag.NodeShape{whole(0.5, onlyT4), whole(0.5, 0)}, nil, 2, 0},
		// The same with 6 g2 GPUs taken: F = 10, rho_t4 = 0.5 x 10 / 4.
		{"g2 half full: t4 cheaper", []frag.NodeShape{whole(0.5, onlyT4), whole(0.5, 0)}, []string{"b:all", "c:0,1"}, 1.25, 0},
		// A shape of either model spreads over both by free capacity:
		// 1 x 16 / 16 on each.
		{"either model", []frag.NodeShape{whole(1, either)}, nil, 1, 1},
		// Shares count by their milli: a t4-only 500-milli shape of weight
		// 0.5 is 250 of 750 milli of demand, a third: 1/3 x 16 / 4.
		{"shares by milli", []frag.NodeShape{{GPUs: 1, Milli: 500, Weight: 0.5, Models: onlyT4}, whole(0.5, 0)}, nil, 4.0 / 3, 0},
		// Every t4 taken: nothing left to keep for t4 jobs.
		{"t4 full", []frag.NodeShape{whole(0.5, onlyT4), whole(0.5, 0)}, []string{"a:all"}, 0, 0},
		// No constrained shape: every model 0.
		{"no constraints", []frag.NodeShape{whole(1, 0)}, nil, 0, 0},
	} {
		s := occupancy.New(c)
		occupy(t, s, tc.busy...)
		w := frag.Workload{Node: tc.shapes}
		sc := newScarcity(c, &w)
		sc.update(c, s)
		if math.Abs(sc.rho[t4]-tc.wantT4) > 1e-9 || math.Abs(sc.rho[g2]-tc.want) > 1e-9 {
			t.Errorf("%s: rho t4 %g, g2 %g; want %g and %g", tc.name, sc.rho[t4], sc.rho[g2], tc.wantT4, tc.want)
		}
	}
}

// An unconstrained 1-GPU job goes to the common model when the fill model
// rates both alike, although the scarce node comes first in node order;
// without model constraints in the workload node order decides as before.
func TestScarceModelsAreLeftToConstrainedJobs(t *testing.T) {
	c := scarceCluster()
	t4, _ := c.ModelByName("t4")
	s := occupancy.New(c)
	// node a (t4) and node b (g2) each have one GPU busy: equal holes.
	occupy(t, s, "a:0", "b:0")
	// 3% of the jobs need t4: rho_t4 = 0.03 x 14 / 3 = 0.14, a cost of
	// 140 milli on a t4 GPU, none on g2: past the 80-milli resolution.
	constrained := frag.Workload{Node: []frag.NodeShape{whole(0.03, topology.ModelSet(0).With(t4)), whole(0.97, 0)}}
	free := frag.Workload{Node: []frag.NodeShape{whole(1, 0)}}
	for _, tc := range []struct {
		name string
		w    *frag.Workload
		want string
	}{
		{"constrained jobs in the mix: the g2 hole", &constrained, "b"},
		{"no constraints: first fit by node order", &free, "a"},
	} {
		res := New(c, Options{Workload: tc.w}).Place(s, request.Request{GPUs: 1})
		if got := c.Nodes[res.Alloc.Nodes[0].Node].Name; res.Status != Placed || got != tc.want {
			t.Errorf("%s: %v on %s, want node %s", tc.name, res.Status, got, tc.want)
		}
	}
}

// Scarcity is measured on free capacity: of two models its own jobs want
// alike, a free job is sent to the one that has more left for them.
func TestScarcityFollowsFreeCapacity(t *testing.T) {
	c := modelCluster("x", "x", "y", "y")
	x, _ := c.ModelByName("x")
	y, _ := c.ModelByName("y")
	// A fifth of the demand is x-only, a fifth y-only.
	w := frag.Workload{Node: []frag.NodeShape{
		whole(0.2, topology.ModelSet(0).With(x)), whole(0.2, topology.ModelSet(0).With(y)), whole(0.6, 0),
	}}
	e := New(c, Options{Workload: &w})
	for _, tc := range []struct {
		name string
		busy []string
		want string
	}{
		// Empty: rho_x = rho_y = 0.2 x 16 / 8 = 0.4, a tie: node order.
		{"both free", nil, "a"},
		// One GPU left on a and on c, equal holes (whole-GPU jobs only:
		// the fill model rates every GPU alike; best fit prefers a hole to
		// the free node d, node order a to c). x has 2 GPUs left, y 5:
		// F = 7, rho_x = 0.2 x 7 / 2 = 0.7, rho_y = 0.2 x 7 / 5 = 0.28:
		// 700 against 280 milli, the y hole.
		{"x nearly full", []string{"a:0-2", "b:0-2", "c:0-2"}, "c"},
		// The other way round: x has 5 left (a's hole and b), y 2.
		{"y nearly full", []string{"a:0-2", "c:0-2", "d:0-2"}, "a"},
		// Both as full: rho 0.2 x 4 / 2 = 0.4 each, a tie: node order.
		{"both as full", []string{"a:0-2", "b:0-2", "c:0-2", "d:0-2"}, "a"},
	} {
		s := occupancy.New(c)
		occupy(t, s, tc.busy...)
		res := e.Place(s, request.Request{GPUs: 1})
		if got := c.Nodes[res.Alloc.Nodes[0].Node].Name; res.Status != Placed || got != tc.want {
			t.Errorf("%s: %v on %s, want node %s", tc.name, res.Status, got, tc.want)
		}
	}
}
