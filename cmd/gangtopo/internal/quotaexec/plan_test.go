package quotaexec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// planConfig: 32 GPUs; a guaranteed 16 and lends, b 8 and lends, c 8 and
// never lends.
func planConfig() ctld.QuotaConfig {
	c := ctld.DefaultQuota()
	c.Enabled = true
	c.Shares = quota.Shares{{Account: "a", GPUs: 16, Lend: true}, {Account: "b", GPUs: 8, Lend: true}, {Account: "c", GPUs: 8}}
	return c
}

func TestPlanMoves(t *testing.T) {
	type want struct {
		moves    []string // target:from>to
		limits   Limits
		entitled []string
		cannot   map[string]int
	}
	for _, tc := range []struct {
		name string
		run  []RunJob
		wait []WaitJob
		// bound is quota.borrow_max_gpu_hours (0: none)
		bound float64
		want  want
	}{{
		// a is quiet: pool = a's 16 idle + b's 8 - b's 8 in use... b uses 8
		// (its share), so b's 8-GPU job is beyond it and borrows from a's 16.
		name: "a quiet lends to b",
		run:  []RunJob{{ID: "1", Account: "b", QOS: "gt-b", GPUs: 8}},
		wait: []WaitJob{{Target: "2", Account: "b", QOS: "gt-b", GPUs: 8}, {Target: "3", Account: "b", QOS: "gt-b", GPUs: 8}, {Target: "4", Account: "b", QOS: "gt-b", GPUs: 8}},
		// b's idle share is 0 (it runs its 8): it has nothing to lend; c
		// never lends: pool = a's 16. Jobs 2 and 3 borrow 8 each (16 <=
		// 16), job 4 does not fit the pool and stays.
		want: want{moves: []string{"2:gt-b>gt-borrow", "3:gt-b>gt-borrow"},
			// own QOS at the shares; borrow QOS: 0 running there + pool 16 -
			// borrowed 0
			limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 16, "gt-reclaim": 0}},
	}, {
		// a now waits for a job of its whole idle share (16 of 16): it
		// keeps all 16 back and lends nothing; b's borrowed 8 are
		// reclaimable. a's waiting job fits its share: if it sat in the
		// borrow QOS it moves back to its own.
		name: "a waits for its whole idle share, lends nothing",
		run:  []RunJob{{ID: "1", Account: "b", QOS: "gt-b", GPUs: 8}, {ID: "2", Account: "b", QOS: "gt-borrow", GPUs: 8}},
		wait: []WaitJob{{Target: "5", Account: "a", QOS: "gt-borrow", GPUs: 16}, {Target: "6", Account: "b", QOS: "gt-borrow", GPUs: 8}},
		// pool = c's nothing (c never lends) + a's 16 - 16 kept back = 0:
		// job 6 may not borrow and stays where it is.
		// borrow QOS: 8 running there + max(0, pool 0 - borrowed 8) = 8
		want: want{moves: []string{"5:gt-borrow>gt-a"}, entitled: []string{"5"}, limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 8, "gt-reclaim": 0}},
	}, {
		// the same as "a quiet lends to b", but b's first waiting job may
		// not be requeued (an salloc session, --no-requeue): preempting it
		// would cancel it, so it never borrows; one that sat in the
		// borrow QOS goes back to b's own
		name: "jobs that may not be requeued do not borrow",
		run:  []RunJob{{ID: "1", Account: "b", QOS: "gt-b", GPUs: 8}},
		wait: []WaitJob{{Target: "2", Account: "b", QOS: "gt-b", GPUs: 8, NoRequeue: true}, {Target: "3", Account: "b", QOS: "gt-b", GPUs: 8},
			{Target: "4", Account: "b", QOS: "gt-borrow", GPUs: 8, NoRequeue: true}, {Target: "5", Account: "b", QOS: "gt-b", GPUs: 8}},
		// pool a's 16: jobs 3 and 5 borrow it; 2 and 4 (16 GPUs) cannot
		want: want{moves: []string{"3:gt-b>gt-borrow", "4:gt-borrow>gt-b", "5:gt-b>gt-borrow"}, cannot: map[string]int{"b": 16},
			limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 16, "gt-reclaim": 0}},
	}, {
		// the same with a borrow bound of 64 GPU-hours: job 2 (8 GPUs x 12
		// h = 96) and job 4 (no time limit) would put more at risk, so they
		// do not borrow; 3 (8 x 8 h = 64) and 5 (8 x 1 h) do
		name: "jobs over the borrow bound do not borrow",
		run:  []RunJob{{ID: "1", Account: "b", QOS: "gt-b", GPUs: 8}},
		wait: []WaitJob{{Target: "2", Account: "b", QOS: "gt-b", GPUs: 8, TimeLimit: 12 * time.Hour}, {Target: "3", Account: "b", QOS: "gt-b", GPUs: 8, TimeLimit: 8 * time.Hour},
			{Target: "4", Account: "b", QOS: "gt-borrow", GPUs: 8}, {Target: "5", Account: "b", QOS: "gt-b", GPUs: 8, TimeLimit: time.Hour}},
		bound: 64,
		want: want{moves: []string{"3:gt-b>gt-borrow", "4:gt-borrow>gt-b", "5:gt-b>gt-borrow"}, cannot: map[string]int{"b": 16},
			limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 16, "gt-reclaim": 0}},
	}, {
		// The rule that tells lending apart from "a team with waiting jobs
		// lends nothing" (which docs stated): a runs 4 of its 16 and waits
		// for a 4-GPU job; it keeps those 4 back and lends the other 8
		// (quota.Ledger). b runs its 8 and waits for two 8-GPU jobs beyond
		// its share: job 2 borrows a's 8 (8 <= 8), job 3 does not fit and
		// stays. Under the old rule a lent nothing and both stayed.
		name: "a waiting lender keeps back what its jobs need and lends the rest",
		run:  []RunJob{{ID: "1", Account: "a", QOS: "gt-a", GPUs: 4}, {ID: "9", Account: "b", QOS: "gt-b", GPUs: 8}},
		wait: []WaitJob{{Target: "5", Account: "a", QOS: "gt-a", GPUs: 4},
			{Target: "2", Account: "b", QOS: "gt-b", GPUs: 8}, {Target: "3", Account: "b", QOS: "gt-b", GPUs: 8}},
		// borrow QOS: 0 running there + pool 8 - borrowed 0 = 8; a's job 5,
		// within its share, is entitled to GPUs back if it does not start
		want: want{moves: []string{"2:gt-b>gt-borrow"}, entitled: []string{"5"}, limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 8, "gt-reclaim": 0}},
	}, {
		// Issue 26: a runs its 16, b 6 of its 8 (it lends 2), c 4 of its 8
		// (it never lends): the pool is 2. c's 6-GPU job takes c's
		// remainder of 4 and borrows 2 (2 <= 2); before, it had to borrow
		// all 6 and waited. The borrow QOS counts the whole job, so its
		// limit is 0 running there + pool 2 - borrowed 0 + c's own 4 = 6:
		// the job's size.
		name: "a job beyond its share takes its account's remainder first",
		run: []RunJob{{ID: "1", Account: "a", QOS: "gt-a", GPUs: 16}, {ID: "2", Account: "b", QOS: "gt-b", GPUs: 6},
			{ID: "3", Account: "c", QOS: "gt-c", GPUs: 4}},
		wait: []WaitJob{{Target: "4", Account: "c", QOS: "gt-c", GPUs: 6}},
		want: want{moves: []string{"4:gt-c>gt-borrow"}, limits: Limits{"gt-a": 16, "gt-b": 8, "gt-c": 8, "gt-borrow": 6, "gt-reclaim": 0}},
	}, {
		// a job in a QOS of the site's (not own, not borrow) is left alone,
		// and so is an account with no share.
		name: "other QOS and accounts untouched",
		wait: []WaitJob{{Target: "7", Account: "a", QOS: "normal", GPUs: 8}, {Target: "8", Account: "zz", QOS: "gt-borrow", GPUs: 8}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := planConfig()
			cfg.BorrowMaxGPUHours = tc.bound
			c := Plan(cfg, 32, tc.run, tc.wait, nil)
			var got []string
			for _, m := range c.Moves {
				got = append(got, m.Job.Target+":"+m.From+">"+m.To)
			}
			if diff := cmp.Diff(tc.want.moves, got); diff != "" {
				t.Errorf("moves (-want +got):\n%s", diff)
			}
			var ent []string
			for _, j := range c.Entitled {
				ent = append(ent, j.Target)
			}
			if diff := cmp.Diff(tc.want.entitled, ent); diff != "" {
				t.Errorf("entitled (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.cannot, c.CannotBorrow, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("cannot borrow (-want +got):\n%s", diff)
			}
			if tc.want.limits != nil {
				if diff := cmp.Diff(tc.want.limits, c.Limits); diff != "" {
					t.Errorf("limits (-want +got):\n%s", diff)
				}
			}
		})
	}
}
