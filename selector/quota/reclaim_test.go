package quota

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// held is a running job of the reclaim scenarios: whole nodes of lab16
// (16 nodes x 8 GPUs; leaf1 = node01-04, leaf2 = node05-08, leaf3 =
// node09-12, leaf4 = node13-16).
type held struct {
	nodes     []string
	account   string
	borrowing bool
	cost      float64
}

// scenario builds the snapshot, the ledger and Reclaim's options.
func scenario(t *testing.T, shares Shares, jobs []held) (*occupancy.Snapshot, *Ledger, ReclaimOptions) {
	t.Helper()
	c := topotest.Lab16()
	s := occupancy.New(c)
	var lj []Job
	for i, h := range jobs {
		j := occupancy.Job{ID: fmt.Sprint(i)}
		for _, name := range h.nodes {
			n, ok := c.NodeByName(name)
			if !ok {
				t.Fatalf("no node %s", name)
			}
			j.Alloc.Nodes = append(j.Alloc.Nodes, occupancy.NodeAlloc{Node: n, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000})
		}
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
		lj = append(lj, Job{Account: h.account, GPUs: 8 * len(h.nodes), Running: true, Borrowing: h.borrowing})
	}
	l := Compute(shares, c.NumGPUs(), lj, nil, 0)
	o := ReclaimOptions{
		Holder: func(j int) (string, bool) { return jobs[j].account, jobs[j].borrowing },
		Cost:   func(j int) float64 { return jobs[j].cost },
	}
	return s, &l, o
}

func nodes(prefix string, lo, hi int) []string {
	var out []string
	for i := lo; i <= hi; i++ {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

// The scenario of TestReclaim's binding cases (see there).
var (
	boundShares = Shares{{Account: "a", GPUs: 32}, {Account: "b", GPUs: 48}, {Account: "c", GPUs: 16}}
	boundJobs   = []held{{[]string{"node01", "node02", "node03", "node04", "node13", "node14"}, "b", false, 0},
		{[]string{"node05", "node06", "node07", "node08"}, "b", true, 1},
		{[]string{"node09", "node10", "node11", "node12"}, "c", true, 5},
		{[]string{"node15", "node16"}, "c", false, 0}}
)

func TestReclaim(t *testing.T) {
	shares := Shares{{Account: "a", GPUs: 32, Lend: true}, {Account: "b", GPUs: 48, Lend: true}, {Account: "c", GPUs: 48, Lend: true}}
	leaf := request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Required}
	tests := []struct {
		name   string
		shares Shares // nil: the three above
		jobs   []held
		r      request.Request
		ok     bool
		domain string
		evict  []int // job indices
		// passedOver: the job was passed over although it fitted
		passedOver bool
		// bound: the only domains the job may start in (its binding)
		bound []string
	}{
		{
			name: "own jobs are never taken: no leaf can be freed",
			// b: own node01-06, borrowed node07, node08; c: own node09-14,
			// borrowed node15, node16. Every leaf holds own jobs, so no
			// leaf can be freed for a's 32-GPU leaf gang.
			jobs: []held{{nodes("node", 1, 6), "b", false, 0}, {[]string{"node07"}, "b", true, 5}, {[]string{"node08"}, "b", true, 5},
				{nodes("node", 9, 14), "c", false, 0}, {[]string{"node15"}, "c", true, 1}, {[]string{"node16"}, "c", true, 1}},
			r:  leaf,
			ok: false,
		},
		{
			name: "a preferred leaf gang no leaf can be freed for takes borrowed GPUs across leaves",
			// the jobs of the row above; the gang only prefers a leaf:
			// the four borrowed nodes (b's and c's excess, 16 each)
			jobs: []held{{nodes("node", 1, 6), "b", false, 0}, {[]string{"node07"}, "b", true, 5}, {[]string{"node08"}, "b", true, 5},
				{nodes("node", 9, 14), "c", false, 0}, {[]string{"node15"}, "c", true, 1}, {[]string{"node16"}, "c", true, 1}},
			r:     request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Preferred},
			ok:    true,
			evict: []int{4, 5, 1, 2}, // the cheapest first
		},
		{
			name: "the leaf that is all borrowed",
			// b: own node01-04, node09-10 (48), borrowed node05-08 as two
			// 16-GPU jobs (b holds 80, excess 32); c: own node11-16. Only
			// leaf2 can be freed: jobs 1 and 2.
			jobs: []held{{append(nodes("node", 1, 4), "node09", "node10"), "b", false, 0},
				{[]string{"node05", "node06"}, "b", true, 5}, {[]string{"node07", "node08"}, "b", true, 5},
				{nodes("node", 11, 16), "c", false, 0}},
			r:      leaf,
			ok:     true,
			domain: "leaf2",
			evict:  []int{1, 2},
		},
		{
			name: "never below the share: b's excess is 16, not 32",
			// b: own 32 on node01-04, borrowed 32 on node05-08 as two
			// 16-GPU jobs (cost 1 each): b holds 64 with share 48, so only
			// 16 may be taken from it. c: own 32 (node13-16), borrowed
			// leaf3 (node09-12) as one 32-GPU job of cost 7: c holds 64,
			// excess 16 too, a 32-GPU job is no candidate. No leaf can be
			// freed within the rule.
			jobs: []held{{nodes("node", 1, 4), "b", false, 0},
				{[]string{"node05", "node06"}, "b", true, 1}, {[]string{"node07", "node08"}, "b", true, 1},
				{nodes("node", 9, 12), "c", true, 7}, {nodes("node", 13, 16), "c", false, 0}},
			r:  leaf,
			ok: false,
		},
		{
			name: "never below the share: the rule sends the plan to the dearer leaf",
			// shares a 32, b 48, c 32. b: own node01-04 (32), borrowed
			// node05-06 and node07-08 (cost 1 each): b holds 64, excess
			// 16, so only one of them may go and leaf2 (cost 2) cannot be
			// freed. c: own node13-16, borrowed node09-10, node11-12 (cost
			// 3 each): c holds 64, excess 32: leaf3 is freed (cost 6).
			shares: Shares{{Account: "a", GPUs: 32}, {Account: "b", GPUs: 48}, {Account: "c", GPUs: 32}},
			jobs: []held{{nodes("node", 1, 4), "b", false, 0},
				{[]string{"node05", "node06"}, "b", true, 1}, {[]string{"node07", "node08"}, "b", true, 1},
				{[]string{"node09", "node10"}, "c", true, 3}, {[]string{"node11", "node12"}, "c", true, 3},
				{nodes("node", 13, 16), "c", false, 0}},
			r:      leaf,
			ok:     true,
			domain: "leaf3",
			evict:  []int{3, 4},
		},
		{
			name: "fits now: nothing to take",
			jobs: []held{{nodes("node", 1, 4), "b", true, 1}},
			r:    leaf,
			ok:   true,
		},
		{
			name: "fits now but passed over: the borrowed leaf is taken, not the free ones",
			// b: own node09-14 (48), borrowed leaf1 (32): excess 32;
			// leaf2 is free but held by the scheduler for an older job
			jobs:       []held{{nodes("node", 9, 14), "b", false, 0}, {nodes("node", 1, 4), "b", true, 1}},
			r:          leaf,
			passedOver: true,
			ok:         true,
			domain:     "leaf1",
			evict:      []int{1},
		},
		{
			name: "passed over, nothing borrowed in one leaf: no plan",
			// b: own node09-14, borrowed node01-02 only: a leaf gang
			// cannot be made of the GPUs it frees alone
			jobs:       []held{{nodes("node", 9, 14), "b", false, 0}, {[]string{"node01", "node02"}, "b", true, 1}},
			r:          leaf,
			passedOver: true,
			ok:         false,
		},
		{
			name: "a one-node job takes one borrowed node, the cheapest",
			// every node busy; b: own node01-04, node07 (40), borrowed
			// node05 (cost 4), node06 (cost 2): holds 56, excess 8
			jobs: []held{{append(nodes("node", 1, 4), "node07"), "b", false, 0}, {[]string{"node05"}, "b", true, 4},
				{[]string{"node06"}, "b", true, 2}, {nodes("node", 8, 16), "c", false, 0}},
			r:      request.Request{GPUs: 8, Nodes: 1},
			ok:     true,
			domain: "",
			evict:  []int{2},
		},
		{
			name: "unbound: the cheapest borrowed leaf",
			// shares a 32, b 48, c 16. b: own node01-04, node13-14 (48),
			// borrowed leaf2 (one job, cost 1): holds 80, excess 32. c: own
			// node15-16 (16), borrowed leaf3 (one job, cost 5): holds 48,
			// excess 32. leaf2 costs least.
			shares: boundShares, jobs: boundJobs, r: leaf, ok: true, domain: "leaf2", evict: []int{1},
		},
		{
			name:   "bound to leaf3: leaf3 is freed, though leaf2 costs less",
			shares: boundShares, jobs: boundJobs, r: leaf, bound: []string{"leaf3"}, ok: true, domain: "leaf3", evict: []int{2},
		},
		{
			// leaf1 holds b's own jobs only: nothing there may be taken,
			// and the binding keeps it out of leaf2 and leaf3
			name:   "bound to leaf1: no plan",
			shares: boundShares, jobs: boundJobs, r: leaf, bound: []string{"leaf1"}, ok: false,
		},
		{
			// the same, the gang only preferring a leaf: it is not
			// widened beyond its binding (the features Slurm holds it to)
			name:   "a preferred leaf gang bound to leaf1: no plan, not widened out of leaf1",
			shares: boundShares, jobs: boundJobs, bound: []string{"leaf1"}, ok: false,
			r: request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Preferred},
		},
		{
			// a one-node job (tier any) bound to node15 (gangtopo's
			// one-node form: features gt_node15). b: own node01-06 (48),
			// borrowed node13 (cost 1): excess 8. c: own node07-12, node14,
			// node16 (64), borrowed node15 (cost 5): excess 24. node15 is
			// freed, though node13 costs less
			name: "a one-node job bound to node15: node15 is freed, though node13 costs less",
			jobs: []held{{nodes("node", 1, 6), "b", false, 0}, {[]string{"node13"}, "b", true, 1},
				{append(nodes("node", 7, 12), "node14", "node16"), "c", false, 0}, {[]string{"node15"}, "c", true, 5}},
			r:     request.Request{GPUs: 8, Nodes: 1},
			bound: []string{"node15"}, ok: true, evict: []int{3},
		},
		{
			// a node gang (node:required) bound to leaf3: the node is one
			// of leaf3's (c's borrowed job there, cost 5), not leaf2's
			// cheaper one
			name:   "a node gang bound to leaf3: a node of leaf3",
			shares: boundShares, jobs: boundJobs, bound: []string{"leaf3"}, ok: true, evict: []int{2},
			r: request.Request{GPUs: 8, Nodes: 1, Tier: topology.TierNode, Mode: request.Required},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := shares
			if tt.shares != nil {
				sh = tt.shares
			}
			s, l, o := scenario(t, sh, tt.jobs)
			o.PassedOver = tt.passedOver
			for _, name := range tt.bound {
				d, ok := s.Cluster.DomainByName(name)
				if !ok {
					t.Fatalf("no domain %s", name)
				}
				o.Domains = append(o.Domains, d)
			}
			e := place.New(s.Cluster, place.Options{})
			p, ok := Reclaim(e, s, tt.r, l, o)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v (plan %+v)", ok, tt.ok, p)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.evict, p.Evict); diff != "" {
				t.Errorf("evict (-want +got):\n%s", diff)
			}
			if got := s.Cluster.Domains[p.Domain].Name; tt.domain != "" && got != tt.domain {
				t.Errorf("domain %s, want %s", got, tt.domain)
			}
			if p.Gang.Status != place.Placed {
				t.Errorf("gang not placed: %v", p.Gang.Status)
			}
		})
	}
}
