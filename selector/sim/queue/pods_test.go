package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// podTotals are the naive-pods counters a scenario checks.
type podTotals struct {
	HeldIdleGPUSeconds float64
	PeakHeldIdle       int
	Deadlocks          int
	Timeouts           int
	Restarts           []int
}

func totals(r *Result) podTotals {
	p := podTotals{HeldIdleGPUSeconds: r.HeldIdleGPUSeconds, PeakHeldIdle: r.PeakHeldIdle, Deadlocks: r.Deadlocks, Timeouts: r.Timeouts}
	for _, o := range r.Outcomes {
		p.Restarts = append(p.Restarts, o.Restarts)
	}
	return p
}

func TestReplayPods(t *testing.T) {
	leaf, nvl := topology.TierLeaf, topology.TierNVLink
	tests := []struct {
		name    string
		oneNode int // Config.OneNodeUpTo
		jobs    []Job
		want    []outcome
		tot     podTotals
	}{{
		name: "no contention: every job starts at submit",
		jobs: []Job{{Name: "a", Submit: 0, Duration: 10, GPUs: 1}, {Name: "b", Submit: 0, Duration: 10, GPUs: 8}, {Name: "c", Submit: 1, Duration: 10, GPUs: 4}},
		// a takes node 1 (most free, lowest), b node 2 (8 free), c node 1.
		want: []outcome{{0, 10, false, nvl}, {0, 10, false, nvl}, {1, 11, false, nvl}},
		tot:  podTotals{Restarts: []int{0, 0, 0}},
	}, {
		name: "partial gangs deadlock until a rendezvous times out",
		// x1 and x2 fill both nodes. a (12) fails at 1 and binds node 1's
		// 8 GPUs when x1 ends at 10, then backs off 2 s (retry 12). b (12)
		// fails at 10.5 (retry 11.5) so when x2 ends at 11.75 b is eligible
		// and a is not: b binds node 2. 16 GPUs held, nothing running:
		// deadlock. a's rendezvous times out at 10 + 600: its 8 GPUs go
		// to b (complete, runs 610..710) and 4 to a's new pods, which get
		// the rest when b ends at 710.
		jobs: []Job{{Name: "x1", Submit: 0, Duration: 10, GPUs: 8}, {Name: "x2", Submit: 0, Duration: 11.75, GPUs: 8}, {Name: "a", Submit: 1, Duration: 100, GPUs: 12}, {Name: "b", Submit: 10.5, Duration: 100, GPUs: 12}},
		want: []outcome{{0, 10, false, nvl}, {0, 11.75, false, nvl}, {710, 810, false, leaf}, {610, 710, false, leaf}},
		// held: 8 GPUs 10..11.75, 16 GPUs 11.75..610, 4 GPUs 610..710.
		tot: podTotals{HeldIdleGPUSeconds: 8*1.75 + 16*598.25 + 4*100, PeakHeldIdle: 16, Deadlocks: 1, Timeouts: 1,
			Restarts: []int{0, 0, 1, 0}},
	}, {
		name:    "a job that fits a server is one pod: it waits whole, holding nothing",
		oneNode: 8,
		// x takes node 1 (tie, lowest), y node 2 (most free). z (8 GPUs,
		// one pod) finds at most 4 free on a node and waits; w (1 GPU)
		// binds beside x meanwhile. When x ends node 1 has 7 free: still
		// not enough; when y ends at 20, z gets node 2.
		jobs: []Job{{Name: "x", Submit: 0, Duration: 10, GPUs: 4}, {Name: "y", Submit: 0, Duration: 20, GPUs: 4}, {Name: "z", Submit: 1, Duration: 5, GPUs: 8}, {Name: "w", Submit: 2, Duration: 100, GPUs: 1}},
		want: []outcome{{0, 10, false, nvl}, {0, 20, false, nvl}, {20, 25, false, nvl}, {2, 102, false, nvl}},
		tot:  podTotals{Restarts: []int{0, 0, 0, 0}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Slowdown: NoSlowdown(), OneNodeUpTo: tc.oneNode}
			res, err := ReplayPods(topotest.FatTree(0, 1, 2, topotest.DGXH100), tc.jobs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, outcomes(res), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.tot, totals(res), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodBackoff(t *testing.T) {
	for attempts, want := range map[int]float64{1: 1, 2: 2, 3: 4, 4: 8, 5: 10, 9: 10} {
		if got := podBackoff(attempts); got != want {
			t.Errorf("podBackoff(%d) = %g, want %g", attempts, got, want)
		}
	}
}
