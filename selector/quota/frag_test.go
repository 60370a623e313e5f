package quota

import (
	"fmt"
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestFragCharge(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	var accounts []string
	add := func(node string, gpus []int, account string) {
		t.Helper()
		n, _ := c.NodeByName(node)
		j := occupancy.Job{ID: fmt.Sprint(len(s.Jobs)), Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n, GPUs: gpus, Milli: 1000}}}}
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
		accounts = append(accounts, account)
	}
	// scatter: eight 1-GPU jobs break node01-08; packed: eight on node09;
	// node10 is shared: p holds 1 GPU, q 3.
	for i := 1; i <= 8; i++ {
		add(fmt.Sprintf("node%02d", i), []int{0}, "scatter")
		add("node09", []int{i - 1}, "packed")
	}
	add("node10", []int{0}, "p")
	add("node10", []int{1, 2, 3}, "q")
	w := frag.PhillyPrior(1)
	m := frag.NewMeter(c, &w)
	got := FragCharge(m, s, func(j int) string { return accounts[j] })

	one := m.Node(s, mustNode(t, c, "node01")) / 1000 // 7 GPUs free that 8-GPU jobs cannot use
	shared := m.Node(s, mustNode(t, c, "node10")) / 1000
	want := map[string]float64{"scatter": 8 * one, "p": shared / 4, "q": 3 * shared / 4}
	if one <= 0 || shared <= 0 {
		t.Fatalf("a broken node should fragment: node01 %g, node10 %g", one, shared)
	}
	for a, w := range want {
		if math.Abs(got[a]-w) > 1e-9 {
			t.Errorf("%s charged %g GPUs, want %g", a, got[a], w)
		}
	}
	// a full node leaves nothing stranded: packing costs nothing
	if got["packed"] != 0 {
		t.Errorf("packed charged %g, want 0", got["packed"])
	}
}

func mustNode(t *testing.T, c *topology.Cluster, name string) topology.NodeID {
	t.Helper()
	n, ok := c.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}
