package queue

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

type timed struct {
	Start, End float64
	By         string
	Cancelled  bool
}

// TestTimingPasses checks when passes run with slurmctld's timing
// (DefaultTiming, slurmctld started at 0: backfill at 30, 60, ...), on
// one leaf of two 8-GPU nodes with first fit and no slowdown.
func TestTimingPasses(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name     string
		jobs     []Job
		want     []timed
		stranded float64
	}{{
		name: "an empty queue starts a job at its submit",
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "b", Submit: 5, Duration: 50, GPUs: 8}},
		want: []timed{{0, 100, "submit", false}, {5, 55, "submit", false}},
	}, {
		name: "a blocked job stops the main pass",
		// b (16) blocks at 1; c (1) is submitted at 2 into a full
		// cluster; a's end at 100 starts b, b's end c, each in the main
		// pass that a job's end runs.
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 16}, {Name: "b", Submit: 1, Duration: 10, GPUs: 16}, {Name: "c", Submit: 2, Duration: 10, GPUs: 1}},
		want: []timed{{0, 100, "submit", false}, {100, 110, "main", false}, {110, 120, "main", false}},
	}, {
		name: "stranded: free GPUs a waiting job fits, until backfill starts it",
		// a holds 8 of 16; b (16) waits; c (4) fits the 8 free from 2
		// until the backfill cycle at 30: min(8 free, c's 4) x 28 s =
		// 112 GPU-s (stranded.go).
		jobs:     []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "b", Submit: 1, Duration: 10, GPUs: 16}, {Name: "c", Submit: 2, Duration: 10, GPUs: 4}},
		want:     []timed{{0, 100, "submit", false}, {100, 110, "main", false}, {30, 40, "backfill", false}},
		stranded: 112,
	}, {
		name: "cancelled while waiting, and while running",
		// b leaves the queue at 50 without running; c (8) still waits
		// for a's GPUs, then takes d's at 50 (b's leaving runs a main
		// pass); d runs from 0 and is cancelled at 40.
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "d", Submit: 0, Duration: 100, GPUs: 8, Cancel: 40},
			{Name: "b", Submit: 1, Duration: 10, GPUs: 16, Cancel: 50}, {Name: "c", Submit: 2, Duration: 10, GPUs: 8}},
		want: []timed{{0, 100, "submit", false}, {0, 40, "submit", false}, {nan, nan, "", true}, {50, 60, "main", false}},
		// from 40 to 50 c fits d's 8 free GPUs but waits behind b
		stranded: 80,
	}, {
		name: "a job's own limit: backfill plans with it, not its run time",
		// c runs 10 s but its limit (120 s) ends after b's reservation at
		// 100, and it needs b's nodes: it waits for b.
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 16}, {Name: "b", Submit: 1, Duration: 10, GPUs: 16}, {Name: "c", Submit: 2, Duration: 10, GPUs: 8, Limit: 120}},
		want: []timed{{0, 100, "submit", false}, {100, 110, "main", false}, {110, 120, "main", false}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.FatTree(0, 1, 2, topotest.DGXH100)
			sd, _ := ParseSlowdown("none")
			tm := DefaultTiming(0)
			res, err := Replay(c, tc.jobs, firstFit{}, Config{Slowdown: sd, Timing: &tm})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]timed, len(res.Outcomes))
			for i, o := range res.Outcomes {
				got[i] = timed{o.Start, o.End, o.By, o.Cancelled}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if got := strandedGPUHours(res, 0, math.Inf(1)) * 3600; math.Abs(got-tc.stranded) > 1e-6 {
				t.Errorf("stranded %g GPU-s, want %g", got, tc.stranded)
			}
		})
	}
}

// TestCancelledRequeuedEndsOnce: a job whose runs are both capped at its
// cancellation has two end events at the same time; it ends once.
func TestCancelledRequeuedEndsOnce(t *testing.T) {
	c := topotest.FatTree(0, 1, 1, topotest.DGXH100)
	g := newGangSim(c, []Job{{Name: "a", Duration: 100, GPUs: 8, Cancel: 50}}, firstFit{}, Config{}.Defaults())
	g.admit(0)
	g.schedule(0, false, 0) // ends at 50 (its cancellation)
	g.requeue(10, 0)
	g.schedule(10, true, 0) // again, ends at 50
	if !g.endJobs(50) || g.done != 1 || g.err != nil {
		t.Fatalf("at 50: %d jobs done, err %v; want the job ended once", g.done, g.err)
	}
	if o := g.out[0]; o.Start != 10 || o.End != 50 || o.Requeues != 1 {
		t.Errorf("outcome %+v, want started at 10, ended at 50, requeued once", o)
	}
}
