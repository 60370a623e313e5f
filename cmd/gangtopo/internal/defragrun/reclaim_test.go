package defragrun

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// On lab16 (4 leaves of 4 x 8 GPUs) teamb runs its share of 64 GPUs in
// its own QOS (node01-08) and borrows leaf3 (node09-12, gt-borrow); leaf4
// is free. teama's 4-node job fits leaf4 now: while Slurm has not looked
// at it (reason None) the plan takes nothing; once Slurm has passed it
// over (reason Priority: leaf4 is held for an older job) the plan takes
// the borrowed leaf back instead, and never teamb's own nodes.
func TestReclaimPassedOverTakesBorrowedGPUs(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	facts := map[string]slurmstate.JobFacts{}
	add := func(id, qos string, names ...string) {
		j := occupancy.Job{ID: id}
		for _, n := range names {
			node, _ := c.NodeByName(n)
			j.Alloc.Nodes = append(j.Alloc.Nodes, occupancy.NodeAlloc{Node: node, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000})
		}
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
		facts[id] = slurmstate.JobFacts{Account: "teamb", QOS: qos, Requeue: true, Batch: true, Known: true, Start: time.Unix(1e9, 0)}
	}
	add("1", "gt-teamb", "node01", "node02", "node03", "node04")
	add("2", "gt-teamb", "node05", "node06", "node07", "node08")
	add("3", "gt-borrow", "node09", "node10", "node11", "node12")
	cfg := ctld.Defaults()
	p, err := NewPlanner(cfg, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	shares := quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}
	l := quota.Compute(shares, c.NumGPUs(), []quota.Job{{Account: "teamb", GPUs: 64, Running: true},
		{Account: "teamb", GPUs: 32, Running: true, Borrowing: true}, {Account: "teama", GPUs: 32}}, nil, 0)
	v := &View{Snapshot: s, Facts: facts, At: time.Unix(1e9+3600, 0)}
	for _, tt := range []struct {
		reason  string
		fitsNow bool
		victims []string
		nodes   string
	}{
		{reason: "None", fitsNow: true, nodes: "node[13-16]"},
		{reason: "Priority", victims: []string{"3"}, nodes: "node[09-12]"},
	} {
		pj := slurmstate.PendingJob{ID: "40", Target: "40", Reason: tt.reason,
			Job: jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, NumTasks: 4}}
		plan, ok, err := p.Reclaim(v, pj, &l, cfg.Quota.BorrowQOS)
		if err != nil || !ok {
			t.Fatalf("reason %s: ok %v, %v", tt.reason, ok, err)
		}
		if plan.FitsNow != tt.fitsNow || plan.Nodes != tt.nodes {
			t.Errorf("reason %s: fits now %v on %s, want %v on %s", tt.reason, plan.FitsNow, plan.Nodes, tt.fitsNow, tt.nodes)
		}
		if diff := cmp.Diff(tt.victims, plan.Victims); diff != "" {
			t.Errorf("reason %s: victims (-want +got):\n%s", tt.reason, diff)
		}
	}
}

// reclaimLab is lab16 with teamb's own 64 GPUs on node01-08 and its jobs
// borrowing on leaf3 (node09-12: one 4-node job, started long ago) and
// leaf4 (node13-16: four 1-node jobs, started just now, so each costs
// less than the leaf3 job); every GPU is busy.
func reclaimLab(t *testing.T) (*Planner, *View, quota.Ledger) {
	t.Helper()
	c := topotest.Lab16()
	s := occupancy.New(c)
	facts := map[string]slurmstate.JobFacts{}
	add := func(id, qos string, start time.Time, names ...string) {
		j := occupancy.Job{ID: id}
		for _, n := range names {
			node, _ := c.NodeByName(n)
			j.Alloc.Nodes = append(j.Alloc.Nodes, occupancy.NodeAlloc{Node: node, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000})
		}
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
		facts[id] = slurmstate.JobFacts{Account: "teamb", QOS: qos, Requeue: true, Batch: true, Known: true, Start: start}
	}
	long, now := time.Unix(1e9, 0), time.Unix(1e9+86400, 0)
	add("1", "gt-teamb", long, "node01", "node02", "node03", "node04")
	add("2", "gt-teamb", long, "node05", "node06", "node07", "node08")
	add("3", "gt-borrow", long, "node09", "node10", "node11", "node12")
	for i, n := range []string{"node13", "node14", "node15", "node16"} {
		add(fmt.Sprint(4+i), "gt-borrow", now.Add(-time.Minute), n)
	}
	p, err := NewPlanner(ctld.Defaults(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	shares := quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}}
	l := quota.Compute(shares, c.NumGPUs(), []quota.Job{{Account: "teamb", GPUs: 64, Running: true},
		{Account: "teamb", GPUs: 64, Running: true, Borrowing: true}, {Account: "teama", GPUs: 16}}, nil, 0)
	return p, &View{Snapshot: s, Facts: facts, At: now}, l
}

// TestReclaimKeepsABoundJobsDomain: teama's 2-node job frees the cheapest
// borrowed jobs when it is free to go anywhere (two 1-minute-old jobs on
// leaf4, not a day of work on leaf3); bound by gangtopo's decision to
// leaf3 (request leaf:required), it frees leaf3, and never a leaf its
// binding keeps it out of. The binding holds whatever its tier: a
// one-node job bound to a node (gangtopo's one-node form, features
// gt_node15) frees that node; a job bound to a leaf whose own tier is
// wider stays in the leaf; a binding that cannot be freed, or that names
// no domain of the topology, gives no plan rather than one Slurm would
// not start the job on (it would wait there, pinned, until pin_timeout).
func TestReclaimKeepsABoundJobsDomain(t *testing.T) {
	p, v, l := reclaimLab(t)
	twoNodes := jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, NumTasks: 2}
	oneNode := jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 1, MaxNodes: 1, NumTasks: 1}
	for _, tt := range []struct {
		name, decision, domain, nodes string
		job                           jobsubmit.Job
		victims                       []string // nil and no nodes: no plan
	}{
		{name: "no decision", job: twoNodes, victims: []string{"4", "5"}},
		{name: "bound to leaf3", job: twoNodes, decision: "gangtopo v1 waiting request=leaf:required gpus=16 bound=leaf3 snapshot=9: no leaf has room",
			domain: "leaf3", victims: []string{"3"}},
		// leaf4's four minute-old jobs cost the same: unbound, the first
		// (node13, job 4) is taken
		{name: "one node, unbound", job: oneNode, nodes: "node13", victims: []string{"4"}},
		{name: "one node bound to node15", job: oneNode, decision: "gangtopo v1 waiting gpus=8 bound=node15 snapshot=9: no node has room",
			nodes: "node15", victims: []string{"6"}},
		// jobs 6 and 7 cost the same: the binding's first (its best)
		{name: "one node bound to node16 or node15", job: oneNode, decision: "gangtopo v1 waiting gpus=8 bound=node16,node15 snapshot=9: no node has room",
			nodes: "node16", victims: []string{"7"}},
		// a 4-node preferred gang bound to leaf4 or leaf3: leaf4's four
		// minute-old jobs cost less than leaf3's day of work
		{name: "4 nodes preferred, bound to leaf3 or leaf4", job: fourNodes(), decision: "gangtopo v1 waiting request=leaf:preferred gpus=32 bound=leaf4,leaf3 snapshot=9: no leaf has room",
			domain: "leaf4", victims: []string{"4", "5", "6", "7"}},
		// leaf1 and leaf2 hold teamb's own jobs: no leaf there can be
		// freed, and the preferred gang is not widened out of them
		{name: "preferred, bound to leaf1 or leaf2: no plan", job: twoNodes, decision: "gangtopo v1 waiting request=leaf:preferred gpus=16 bound=leaf1,leaf2 snapshot=9: no leaf has room"},
		{name: "one node bound to node02: no plan", job: oneNode, decision: "gangtopo v1 waiting gpus=8 bound=node02 snapshot=9: no node has room"},
		{name: "bound to a domain the topology lacks: no plan", job: twoNodes, decision: "gangtopo v1 waiting request=leaf:required gpus=16 bound=leaf9 snapshot=9: no leaf has room"},
	} {
		pj := slurmstate.PendingJob{ID: "40", Target: "40", Reason: "Resources", Decision: tt.decision, Job: tt.job}
		plan, ok, err := p.Reclaim(v, pj, &l, "gt-borrow")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if want := tt.victims != nil || tt.nodes != ""; ok != want {
			t.Errorf("%s: a plan %v (%s on %s, victims %v), want %v", tt.name, ok, plan.Domain, plan.Nodes, plan.Victims, want)
			continue
		}
		if tt.domain != "" && plan.Domain != tt.domain || tt.nodes != "" && plan.Nodes != tt.nodes {
			t.Errorf("%s: plan in %s on %s, want %s on %s", tt.name, plan.Domain, plan.Nodes, tt.domain, tt.nodes)
		}
		if diff := cmp.Diff(tt.victims, plan.Victims); diff != "" {
			t.Errorf("%s: victims (-want +got):\n%s", tt.name, diff)
		}
	}
}

func fourNodes() jobsubmit.Job {
	return jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 4, MaxNodes: 4, NumTasks: 4}
}

// TestReclaimSparesJobsThatCannotBeRequeued: a borrowed job Slurm may not
// requeue (its owner set Requeue=0, or an salloc allocation) is never a
// victim: preempting it would cancel it. With three of leaf4's four jobs
// so, teama's 2-node job takes leaf3's day-old job (one victim frees four
// nodes) although leaf4's minute-old jobs cost less.
func TestReclaimSparesJobsThatCannotBeRequeued(t *testing.T) {
	p, v, l := reclaimLab(t)
	for _, id := range []string{"4", "5", "6"} {
		f := v.Facts[id]
		if id == "5" {
			f.Batch = false // salloc
		} else {
			f.Requeue = false
		}
		v.Facts[id] = f
	}
	pj := slurmstate.PendingJob{ID: "40", Target: "40", Reason: "Resources",
		Job: jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, NumTasks: 2}}
	plan, ok, err := p.Reclaim(v, pj, &l, "gt-borrow")
	if err != nil || !ok {
		t.Fatalf("ok %v, %v", ok, err)
	}
	if diff := cmp.Diff([]string{"3"}, plan.Victims); diff != "" {
		t.Errorf("plan on %s: victims (-want +got):\n%s", plan.Nodes, diff)
	}
}

// running is a job of pinLab: 8 GPUs on each of its nodes.
type running struct {
	id, account, qos string
	start            time.Time
	nodes            []string
}

// pinLab is lab16 with the running jobs given and the ledger of the
// shares over them and the waiting jobs' GPUs (teama's).
func pinLab(t *testing.T, shares quota.Shares, at time.Time, runs []running, waiting ...int) (*Planner, *View, quota.Ledger) {
	t.Helper()
	c := topotest.Lab16()
	s := occupancy.New(c)
	facts := map[string]slurmstate.JobFacts{}
	var jobs []quota.Job
	for _, r := range runs {
		j := occupancy.Job{ID: r.id}
		for _, n := range r.nodes {
			node, _ := c.NodeByName(n)
			j.Alloc.Nodes = append(j.Alloc.Nodes, occupancy.NodeAlloc{Node: node, GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000})
		}
		if err := s.AddJob(j); err != nil {
			t.Fatal(err)
		}
		facts[r.id] = slurmstate.JobFacts{Account: r.account, QOS: r.qos, Requeue: true, Batch: true, Known: true, Start: r.start}
		jobs = append(jobs, quota.Job{Account: r.account, GPUs: 8 * len(r.nodes), Running: true, Borrowing: r.qos == "gt-borrow"})
	}
	for _, g := range waiting {
		jobs = append(jobs, quota.Job{Account: "teama", GPUs: g})
	}
	p, err := NewPlanner(ctld.Defaults(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, &View{Snapshot: s, Facts: facts, At: at}, quota.Compute(shares, c.NumGPUs(), jobs, nil, 0)
}

// TestReclaimAfterAPin: teama's 2-node jobs (16 GPUs each, within its
// share, not yet looked at by Slurm: reason None) are planned one after
// another on one poll, each pinned (View.Pinned) before the next is
// planned. No two plans share nodes or
// victims, a victim's other nodes are free for the next, and no account
// is taken below its share.
func TestReclaimAfterAPin(t *testing.T) {
	long, now := time.Unix(1e9, 0), time.Unix(1e9+86400, 0)
	recent := now.Add(-time.Minute)
	own := func(id, account string, nodes ...string) running {
		return running{id: id, account: account, qos: "gt-" + account, start: long, nodes: nodes}
	}
	borrowed := func(id, account string, start time.Time, nodes ...string) running {
		return running{id: id, account: account, qos: "gt-borrow", start: start, nodes: nodes}
	}
	leaf4 := []running{borrowed("4", "teamb", recent, "node13"), borrowed("5", "teamb", recent, "node14"),
		borrowed("6", "teamb", recent, "node15"), borrowed("7", "teamb", recent, "node16")}
	type plan struct {
		nodes   string
		victims []string
		fitsNow bool
	}
	for _, tt := range []struct {
		name   string
		shares quota.Shares
		runs   []running
		want   []plan // one a job, in the order planned
	}{
		{
			// teamb (share 64) runs node01-08 in its own QOS and borrows
			// node09-16: 64 beyond its share. Leaf4's minute-old jobs
			// cost least: node13-14, then node15-16, never twice
			name:   "the next job frees other nodes",
			shares: quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}},
			runs: append([]running{own("1", "teamb", "node01", "node02", "node03", "node04"),
				own("2", "teamb", "node05", "node06", "node07", "node08"),
				borrowed("3", "teamb", long, "node09", "node10", "node11", "node12")}, leaf4...),
			want: []plan{{nodes: "node[13-14]", victims: []string{"4", "5"}}, {nodes: "node[15-16]", victims: []string{"6", "7"}}},
		},
		{
			// leaf4 is teamb's own (in its QOS), so the day-old 4-node job
			// 3 on leaf3 is the only one to take: the first plan takes it
			// for node09-10, and node11-12, which Slurm frees with it,
			// hold the second job now (nothing more to take)
			name:   "a victim's other nodes are free for the next",
			shares: quota.Shares{{Account: "teama", GPUs: 64, Lend: true}, {Account: "teamb", GPUs: 64, Lend: true}},
			runs: []running{own("1", "teamb", "node01", "node02", "node03", "node04"),
				own("2", "teamb", "node05", "node06", "node07", "node08"),
				borrowed("3", "teamb", long, "node09", "node10", "node11", "node12"),
				own("4", "teamb", "node13", "node14", "node15", "node16")},
			want: []plan{{nodes: "node[09-10]", victims: []string{"3"}}, {nodes: "node[11-12]", fitsNow: true}},
		},
		{
			// teamb (share 48) runs 32 in its own QOS and borrows leaf4:
			// 64 in use, 16 beyond its share; teamc (share 32) runs
			// node05-08 and borrows leaf3 (job 3, a day old): 32 beyond.
			// The first job takes two of teamb's minute-old jobs (16, all
			// its excess); the second may not take the other two (teamb
			// would fall to 32 < 48): it takes teamc's job 3
			name: "no account below its share",
			shares: quota.Shares{{Account: "teama", GPUs: 48, Lend: true}, {Account: "teamb", GPUs: 48, Lend: true},
				{Account: "teamc", GPUs: 32, Lend: true}},
			runs: append([]running{own("1", "teamb", "node01", "node02", "node03", "node04"),
				own("2", "teamc", "node05", "node06", "node07", "node08"),
				borrowed("3", "teamc", long, "node09", "node10", "node11", "node12")}, leaf4...),
			want: []plan{{nodes: "node[13-14]", victims: []string{"4", "5"}}, {nodes: "node[09-10]", victims: []string{"3"}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, v, l := pinLab(t, tt.shares, now, tt.runs, 16, 16)
			var got []plan
			for i := range tt.want {
				pj := slurmstate.PendingJob{ID: fmt.Sprint(40 + i), Target: fmt.Sprint(40 + i), Reason: "None",
					Job: jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, NumTasks: 2}}
				pl, ok, err := p.Reclaim(v, pj, &l, "gt-borrow")
				if err != nil || !ok {
					t.Fatalf("job %s: ok %v, %v", pj.ID, ok, err)
				}
				got = append(got, plan{nodes: pl.Nodes, victims: pl.Victims, fitsNow: pl.FitsNow})
				v.Pinned(pl, &l, "teama", 16)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(plan{})); diff != "" {
				t.Errorf("plans (-want +got):\n%s", diff)
			}
		})
	}
}
