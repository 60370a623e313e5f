package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestKeepBinding(t *testing.T) {
	s := occupancy.New(topotest.Lab16())
	s.Bindings = []occupancy.Binding{
		{Job: "12", Features: "[gt_node02|gt_node06]"},
		{Job: "13", Excluded: "node[05-08]"},
		{Job: "14", Features: "[gt_leaf1|gt_leaf2]"},     // an array's pending record
		{Job: "20+0", Features: "[gt_node01|gt_node03]"}, // a hetjob's components
		{Job: "20+1", Features: "[gt_leaf3|gt_leaf4]"},
		// published with the owner's uid (1000)
		{Job: "30", User: 1000, HasUser: true, Features: "[gt_leaf1|gt_leaf2]", Excluded: "node[05-08]"},
		{Job: "31+0", User: 1000, HasUser: true, Features: "[gt_node01|gt_node03]"},
		{Job: "31+1", User: 1000, HasUser: true, Features: "[gt_leaf3|gt_leaf4]"},
	}
	str := func(v string) *string { return &v }
	type answer struct {
		Action             Action
		Features, ExcNodes string
		ErrMsg             string
	}
	tests := []struct {
		name string
		m    Modification
		want answer
	}{
		{"the user's constraint goes before gangtopo's", Modification{JobID: "12", Features: str("gt_h100")},
			answer{Action: Modify, Features: "(gt_h100)&[gt_node02|gt_node06]", ExcNodes: "<unset>"}},
		{"clearing the features keeps gangtopo's", Modification{JobID: "12", Features: str("")},
			answer{Action: Modify, Features: "[gt_node02|gt_node06]", ExcNodes: "<unset>"}},
		// an update of a whole array reaches job_modify once per task with
		// the same fields: the second call must not add it twice
		{"already there", Modification{JobID: "14", Features: str("(a)&[gt_leaf1|gt_leaf2]")},
			answer{Action: Modify, Features: "(a)&[gt_leaf1|gt_leaf2]", ExcNodes: "<unset>"}},
		{"a task of an array's pending record", Modification{JobID: "14_7", Features: str("a")},
			answer{Action: Modify, Features: "(a)&[gt_leaf1|gt_leaf2]", ExcNodes: "<unset>"}},
		{"exclusions are the user's and gangtopo's", Modification{JobID: "13", ExcNodes: str("node16")},
			answer{Action: Modify, Features: "<unset>", ExcNodes: "node[05-08,16]"}},
		{"no exclusions of gangtopo's: nothing to keep", Modification{JobID: "12", ExcNodes: str("")}, answer{Features: "<unset>", ExcNodes: "<unset>"}},
		{"a job gangtopo did not bind", Modification{JobID: "99", Features: str("x")}, answer{Features: "<unset>", ExcNodes: "<unset>"}},
		{"a component", Modification{JobID: "20+1", Features: str("x")},
			answer{Action: Modify, Features: "(x)&[gt_leaf3|gt_leaf4]", ExcNodes: "<unset>"}},
		{"the owner's update", Modification{UserID: 1000, JobID: "30", Features: str("x"), ExcNodes: str("node[03,16]")},
			answer{Action: Modify, Features: "(x)&[gt_leaf1|gt_leaf2]", ExcNodes: "node[03,05-08,16]"}},
		// on 22.05 job_modify runs before Slurm checks who may update:
		// anyone else's update passes untouched, unread, and Slurm refuses
		// it (or carries it out for an operator, as given)
		{"another user's update", Modification{UserID: 1001, JobID: "30", Features: str("x"), ExcNodes: str("n[0-1048574]")},
			answer{Features: "<unset>", ExcNodes: "<unset>"}},
		{"root's update of a job it does not own", Modification{UserID: 0, JobID: "30", Features: str("x")},
			answer{Features: "<unset>", ExcNodes: "<unset>"}},
		{"another user's update of a whole hetjob is not refused by gangtopo", Modification{UserID: 1001, JobID: "31", Features: str("x")},
			answer{Features: "<unset>", ExcNodes: "<unset>"}},
		// past NodeListBound (64 on lab16) the user's list is not read:
		// gangtopo's nodes are appended as written
		{"the owner's list past the bound", Modification{UserID: 1000, JobID: "30", ExcNodes: str("n[0-1048574]")},
			answer{Action: Modify, Features: "<unset>", ExcNodes: "n[0-1048574],node[05-08]"}},
		{"the owner's list not a host list", Modification{UserID: 1000, JobID: "30", ExcNodes: str("node[1-")},
			answer{Features: "<unset>", ExcNodes: "<unset>"}},
		// 1,020 bytes of the user's and gangtopo's 19 would be 1,042: Slurm
		// would refuse the update, so it passes as given
		{"features over Slurm's cap", Modification{UserID: 1000, JobID: "30", Features: str(strings.Repeat("a&", 509) + "aa")},
			answer{Features: "<unset>", ExcNodes: "<unset>"}},
		{"a whole hetjob", Modification{JobID: "20", Features: str("x")},
			answer{Action: Reject, Features: "<unset>", ExcNodes: "<unset>",
				ErrMsg: "gangtopo: job 20 is a heterogeneous job whose components gangtopo placed each on its own: update its features and excluded nodes one component at a time (JobId=20+0, 20+1, ...)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := KeepBinding(tc.m, s)
			v := func(p *string) string {
				if p == nil {
					return "<unset>"
				}
				return *p
			}
			got := answer{Action: r.Action, Features: v(r.Features), ExcNodes: v(r.ExcNodes), ErrMsg: r.ErrMsg}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s\nlog: %s", diff, r.Log)
			}
		})
	}
}

// TestKeepBindingCost: whatever a user writes, an update costs slurmctld
// what reading its text costs: no name of a list past the bound is built,
// for the job's owner or anyone else. 2^20 names would be 2^20
// allocations (0.74 s and 376 MB on 22.05 before the bound).
func TestKeepBindingCost(t *testing.T) {
	s := occupancy.New(topotest.Lab16())
	s.Bindings = []occupancy.Binding{{Job: "30", User: 1000, HasUser: true, Excluded: "node[05-08]"}}
	huge := "n[0-1048574]"
	for _, uid := range []uint32{1000, 1001} {
		allocs := testing.AllocsPerRun(3, func() {
			KeepBinding(Modification{UserID: uid, JobID: "30", ExcNodes: &huge}, s)
		})
		if allocs > 100 {
			t.Errorf("uid %d: an update naming 2^20 nodes took %v allocations", uid, allocs)
		}
	}
}

// BenchmarkKeepBinding: what one update costs the goroutine that answers
// submissions, on a 1,024-node cluster (NodeListBound 2,048), for another
// user's update, the owner's list at the bound, and past it.
func BenchmarkKeepBinding(b *testing.B) {
	c := topotest.FatTree(4, 8, 32, topotest.DGXH100)
	s := occupancy.New(c)
	s.Bindings = []occupancy.Binding{{Job: "30", User: 1000, HasUser: true, Excluded: "node[0100-0199]"}}
	atBound := "node[0001-1024],node[0001-1024]"
	huge := "n[0-1048574]"
	for _, bc := range []struct {
		name string
		uid  uint32
		list *string
	}{
		{"another user", 1001, &huge},
		{"owner at the bound", 1000, &atBound},
		{"owner past the bound", 1000, &huge},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				KeepBinding(Modification{UserID: bc.uid, JobID: "30", ExcNodes: bc.list}, s)
			}
		})
	}
}
