package defragrun

import (
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
		facts[id] = slurmstate.JobFacts{Account: "teamb", QOS: qos, Requeue: true, Known: true, Start: time.Unix(1e9, 0)}
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
