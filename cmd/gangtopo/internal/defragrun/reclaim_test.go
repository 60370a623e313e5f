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
// binding keeps it out of.
func TestReclaimKeepsABoundJobsDomain(t *testing.T) {
	p, v, l := reclaimLab(t)
	job := jobsubmit.Job{Name: "train", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, NumTasks: 2}
	for _, tt := range []struct {
		name, decision, domain string
		victims                []string
	}{
		{name: "no decision", victims: []string{"4", "5"}},
		{name: "bound to leaf3", decision: "gangtopo v1 waiting request=leaf:required gpus=16 bound=leaf3 snapshot=9: no leaf has room",
			domain: "leaf3", victims: []string{"3"}},
	} {
		pj := slurmstate.PendingJob{ID: "40", Target: "40", Reason: "Resources", Decision: tt.decision, Job: job}
		plan, ok, err := p.Reclaim(v, pj, &l, "gt-borrow")
		if err != nil || !ok {
			t.Fatalf("%s: ok %v, %v", tt.name, ok, err)
		}
		if tt.domain != "" && plan.Domain != tt.domain {
			t.Errorf("%s: plan in %s on %s, want %s", tt.name, plan.Domain, plan.Nodes, tt.domain)
		}
		if diff := cmp.Diff(tt.victims, plan.Victims); diff != "" {
			t.Errorf("%s: victims (-want +got):\n%s", tt.name, diff)
		}
	}
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
