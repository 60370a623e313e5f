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

// scarceCluster has 4 GPUs of a scarce model (node a, 4 "t4") and 12 of a
// common one (nodes b-d, 4 "g2" each), in that node order.
func scarceCluster() *topology.Cluster {
	s := topology.Spec{Name: "scarce"}
	leaf := topology.LeafSpec{Name: "leaf1"}
	for i, m := range []string{"t4", "g2", "g2", "g2"} {
		n := topotest.SmallGPUNode(string(rune('a'+i)), m, 4)
		s.Nodes = append(s.Nodes, n)
		leaf.Nodes = append(leaf.Nodes, n.Name)
	}
	s.Leaves = []topology.LeafSpec{leaf}
	return topotest.MustBuild(s)
}

func TestScarcity(t *testing.T) {
	c := scarceCluster()
	t4, _ := c.ModelByName("t4")
	g2, _ := c.ModelByName("g2")
	// Half of the demand is t4-only, half may go anywhere. t4 is a
	// quarter of the GPUs: r_t4 = 0.5 / 0.25 = 2; g2 has no constrained
	// demand: r_g2 = 0.
	w := frag.Workload{Node: []frag.NodeShape{
		{GPUs: 1, Milli: 1000, Weight: 0.5, Models: topology.ModelSet(0).With(t4)},
		{GPUs: 1, Milli: 1000, Weight: 0.5},
	}}
	r := newScarcity(c, &w)
	if math.Abs(r[t4]-2) > 1e-9 || r[g2] != 0 {
		t.Errorf("scarcity t4 %g, g2 %g; want 2 and 0", r[t4], r[g2])
	}
	// A job of either model set shares the t4 demand in proportion to
	// supply: 4 of 16 GPUs are t4, so a quarter of it lands there.
	either := topology.ModelSet(0).With(t4).With(g2)
	w = frag.Workload{Node: []frag.NodeShape{{GPUs: 1, Milli: 1000, Weight: 1, Models: either}}}
	r = newScarcity(c, &w)
	if math.Abs(r[t4]-1) > 1e-9 || math.Abs(r[g2]-1) > 1e-9 {
		t.Errorf("spread demand: t4 %g, g2 %g; want 1 and 1", r[t4], r[g2])
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
	// 3% of the jobs need t4: the fill model's NoAccess for g2 (30
	// milli a GPU) is below its 80-milli resolution, a tie; scarcity
	// (r_t4 = 0.03 / 0.25 = 0.12, r_g2 = 0) breaks it.
	constrained := frag.Workload{Node: []frag.NodeShape{
		{GPUs: 1, Milli: 1000, Weight: 0.03, Models: topology.ModelSet(0).With(t4)},
		{GPUs: 1, Milli: 1000, Weight: 0.97},
	}}
	free := frag.Workload{Node: []frag.NodeShape{{GPUs: 1, Milli: 1000, Weight: 1}}}
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
