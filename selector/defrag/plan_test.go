package defrag

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func addJob(t *testing.T, s *occupancy.Snapshot, id string, parts map[string][]int) {
	t.Helper()
	j := occupancy.Job{ID: id}
	for name, gpus := range parts {
		n, ok := s.Cluster.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		j.Alloc.Nodes = append(j.Alloc.Nodes, occupancy.NodeAlloc{Node: n, GPUs: gpus, Milli: 1000, CPUMilli: int32(len(gpus)) * 1000})
	}
	if err := s.AddJob(j); err != nil {
		t.Fatal(err)
	}
}

func TestPlanEvictsLeastAndMovesIt(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	// Every leaf has something running, so a 32-GPU leaf gang cannot start.
	addJob(t, s, "a", map[string][]int{"node01": {0}})          // job 0, leaf1
	addJob(t, s, "b", map[string][]int{"node02": {0, 1}})       // job 1, leaf1
	addJob(t, s, "c", map[string][]int{"node05": {0, 1, 2}})    // job 2, leaf2
	addJob(t, s, "d", map[string][]int{"node10": {4}})          // job 3, leaf3: the cheapest
	addJob(t, s, "e", map[string][]int{"node13": {0, 1, 2, 3}}) // job 4, leaf4
	addJob(t, s, "f", map[string][]int{"node14": {7}})          // job 5, leaf4
	e := place.New(c, place.Options{})
	r := request.Request{GPUs: 32, Tier: topology.TierLeaf}
	if res := e.Place(s, r); res.Status != place.NoFit {
		t.Fatalf("gang should not fit now: %v %s", res.Status, res.Message)
	}
	p, ok := For(e, s, r, Options{})
	if !ok {
		t.Fatal("no plan")
	}
	// Evicting job d (1 GPU) frees leaf3; d then fits in a hole elsewhere.
	if got := c.Domains[p.Domain].Name; got != "leaf3" {
		t.Errorf("domain %s, want leaf3", got)
	}
	if diff := cmp.Diff([]int{3}, p.Evict); diff != "" {
		t.Errorf("evict (-want +got):\n%s", diff)
	}
	if p.EvictGPUs != 1 || p.Gang.Status != place.Placed || len(p.Moves) != 1 || len(p.Requeued) != 0 {
		t.Errorf("plan %+v", p)
	}
}

func TestPlanIsMinimal(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	// Only leaf1 is up (the rest drained): a 4-GPU job on node01 and a
	// 1-GPU job on each of node02..node04 leave 32 - 7 = 25 GPUs free. A
	// 26-GPU gang needs one more: evicting a single 1-GPU job is enough, and
	// the 4-GPU job must stay.
	for n := 5; n <= 16; n++ {
		id := topology.NodeID(n - 1)
		s.SetState(id, occupancy.StateDrain)
	}
	addJob(t, s, "a", map[string][]int{"node01": {0, 1, 2, 3}})
	addJob(t, s, "b", map[string][]int{"node02": {0}})
	addJob(t, s, "c", map[string][]int{"node03": {0}})
	addJob(t, s, "d", map[string][]int{"node04": {0}})
	e := place.New(c, place.Options{})
	p, ok := For(e, s, request.Request{GPUs: 26, Tier: topology.TierLeaf}, Options{})
	if !ok || p.EvictGPUs != 1 || len(p.Evict) != 1 {
		t.Fatalf("plan %+v ok=%v, want one 1-GPU eviction", p, ok)
	}
	// No job may be evicted: no plan.
	if _, ok := For(e, s, request.Request{GPUs: 26, Tier: topology.TierLeaf}, Options{Evictable: func(int) bool { return false }}); ok {
		t.Error("planned with nothing evictable")
	}
}

// TestPlanCheapestDomain: with a cost per job, the plan goes where taking
// costs least, not where the fewest GPUs are taken.
func TestPlanCheapestDomain(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	addJob(t, s, "a", map[string][]int{"node01": {0}})       // job 0, leaf1: 1 GPU, dear
	addJob(t, s, "b", map[string][]int{"node05": {0, 1}})    // job 1, leaf2: 2 GPUs, cheap
	addJob(t, s, "c", map[string][]int{"node09": {0, 1, 2}}) // job 2, leaf3
	addJob(t, s, "d", map[string][]int{"node13": {0, 1, 2}}) // job 3, leaf4
	e := place.New(c, place.Options{})
	r := request.Request{GPUs: 32, Tier: topology.TierLeaf}
	cost := map[int]float64{0: 10, 1: 2, 2: 9, 3: 9}
	p, ok := For(e, s, r, Options{Cost: func(j int) float64 { return cost[j] }})
	// leaf2 costs 2 (job b) against 10, 9 and 9
	if !ok || c.Domains[p.Domain].Name != "leaf2" || p.Cost != 2 || p.EvictGPUs != 2 {
		t.Fatalf("plan in %s costing %g evicting %d GPUs (ok %v), want leaf2, 2, 2", c.Domains[p.Domain].Name, p.Cost, p.EvictGPUs, ok)
	}
	// limited to leaf3 and leaf4: 9 either way, leaf3 first by the order
	// of free GPUs (equal) and domains
	l3, _ := c.DomainByName("leaf3")
	l4, _ := c.DomainByName("leaf4")
	p, ok = For(e, s, r, Options{Cost: func(j int) float64 { return cost[j] }, Domains: []topology.DomainID{l4, l3}})
	if !ok || c.Domains[p.Domain].Name != "leaf3" || p.Cost != 9 {
		t.Errorf("limited plan in %s costing %g (ok %v), want leaf3, 9", c.Domains[p.Domain].Name, p.Cost, ok)
	}
	// the gang fits already: an empty plan
	p, ok = For(e, s, request.Request{GPUs: 8, Tier: topology.TierLeaf}, Options{})
	if !ok || len(p.Evict) != 0 || p.Gang.Status != place.Placed {
		t.Errorf("a gang that fits got %+v", p)
	}
}

// TestPlanKeepsTheRequestsNodeList: a gang restricted to some nodes (its
// own --nodelist, or a pin) is planned only on them.
func TestPlanKeepsTheRequestsNodeList(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	addJob(t, s, "a", map[string][]int{"node01": {0}}) // leaf1
	addJob(t, s, "b", map[string][]int{"node05": {0}}) // leaf2
	e := place.New(c, place.Options{})
	// 16 GPUs of leaf1 alone would fit now on node02-03; the gang may
	// use node01 and node02 only: job a must go
	r := request.Request{GPUs: 16, Tier: topology.TierLeaf, Allowed: []string{"node01", "node02"}}
	p, ok := For(e, s, r, Options{})
	if !ok || c.Domains[p.Domain].Name != "leaf1" || len(p.Evict) != 1 || s.Jobs[p.Evict[0]].ID != "a" {
		t.Fatalf("plan %+v (ok %v), want leaf1 evicting job a", p, ok)
	}
	// none of its nodes in a domain of the tier: no plan there
	r.Allowed = []string{"node99"}
	if _, ok := For(e, s, r, Options{}); ok {
		t.Error("planned on nodes the request does not allow")
	}
}

// TestPlanWithinBoundDomains: Options.Domains bound the gang whatever
// their tier. Every node of lab16 runs a 1-GPU job (job i on node i+1),
// cost 5 but node09's (1) and node13's (2): an 8-GPU gang needs a whole
// node, so one job goes.
func TestPlanWithinBoundDomains(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	cost := map[int]float64{}
	for i, n := range c.Nodes {
		addJob(t, s, n.Name, map[string][]int{n.Name: {0}})
		cost[i] = 5
	}
	cost[8], cost[12] = 1, 2
	e := place.New(c, place.Options{})
	node := request.Request{GPUs: 8, Tier: topology.TierNode, Mode: request.Required}
	for _, tt := range []struct {
		name   string
		r      request.Request
		bound  []string
		domain string
		evict  []int // nil: no plan
	}{
		{name: "unbound: the cheapest node", r: node, domain: "node09", evict: []int{8}},
		// a node gang bound to a leaf: a node of the leaf
		{name: "bound to a wider domain: a node of leaf4", r: node, bound: []string{"leaf4"}, domain: "node13", evict: []int{12}},
		// a leaf gang bound to a node (the one-node form): that node,
		// inside its leaf
		{name: "bound to a narrower domain: node15 in leaf4", r: request.Request{GPUs: 8, Tier: topology.TierLeaf, Mode: request.Required},
			bound: []string{"node15"}, domain: "leaf4", evict: []int{14}},
		{name: "tier any bound to node15", r: request.Request{GPUs: 8}, bound: []string{"node15"}, domain: "lab16", evict: []int{14}},
		// leaf3 has node09's cheap job, but the binding is leaf1's nodes
		{name: "32 GPUs, tier any, bound to leaf1: leaf1's four nodes", r: request.Request{GPUs: 32}, bound: []string{"leaf1"},
			domain: "lab16", evict: []int{0, 1, 2, 3}},
		{name: "bound to two nodes: the cheaper, node13", r: node, bound: []string{"node15", "node13"}, domain: "node13", evict: []int{12}},
		// 16 GPUs cannot fit one node: no plan rather than two nodes
		{name: "16 GPUs, tier any, bound to node15: no plan", r: request.Request{GPUs: 16}, bound: []string{"node15"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var o Options
			o.Cost = func(j int) float64 { return cost[j] }
			for _, name := range tt.bound {
				d, ok := c.DomainByName(name)
				if !ok {
					t.Fatalf("no domain %s", name)
				}
				o.Domains = append(o.Domains, d)
			}
			p, ok := For(e, s, tt.r, o)
			if ok != (tt.evict != nil) {
				t.Fatalf("a plan %v, want %v (%+v)", ok, tt.evict != nil, p)
			}
			if !ok {
				return
			}
			evict := append([]int(nil), p.Evict...)
			sort.Ints(evict)
			if diff := cmp.Diff(tt.evict, evict); diff != "" {
				t.Errorf("evict (-want +got):\n%s", diff)
			}
			if got := c.Domains[p.Domain].Name; got != tt.domain {
				t.Errorf("domain %s, want %s", got, tt.domain)
			}
		})
	}
}
