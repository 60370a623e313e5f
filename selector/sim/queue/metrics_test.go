package queue

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestSummarize(t *testing.T) {
	nvl, leaf := topology.TierNVLink, topology.TierLeaf
	r := &Result{Policy: "p", GPUs: 16,
		Jobs: []Job{{Name: "j0", Submit: 0, Duration: 10, GPUs: 1}, {Name: "j1", Submit: 0, Duration: 10, GPUs: 1}, {Name: "j2", Submit: 10, Duration: 20, GPUs: 16}, {Name: "j3", Submit: 20, Duration: 10, GPUs: 4}, {Name: "j4", Submit: 100, Duration: 1, GPUs: 1}},
		Outcomes: []Outcome{
			{Start: 0, End: 10, Tier: nvl, Slowdown: 1},
			{Start: 20, End: 30, Tier: nvl, Slowdown: 1, Backfilled: true},
			{Start: 40, End: 64, Tier: leaf, Feasible: leaf, Slowdown: 1.2},
			{Start: 20, End: 30, Tier: leaf, Feasible: nvl, Slowdown: 1},
			{Start: 100, End: 101, Tier: nvl, Slowdown: 1},
		},
		HeldIdleGPUSeconds: 7200, PeakHeldIdle: 3, Deadlocks: 2, Timeouts: 1}
	want := Summary{Policy: "p", Jobs: 5,
		// window 0..100 s x 16 GPUs = 1600 GPU-s; allocated inside it:
		// j0 10, j1 10, j2 24*16 = 384 (320 at slowdown 1), j3 40.
		Util: 444.0 / 1600, Useful: 380.0 / 1600,
		Classes: []ClassStats{
			{Jobs: 3, MeanWait: 20.0 / 3, P95Wait: 20, MeanJCT: 41.0 / 3},
			{Jobs: 1, MeanWait: 0, P95Wait: 0, MeanJCT: 10},
			{Jobs: 1, MeanWait: 30, P95Wait: 30, MeanJCT: 54},
			{MeanWait: math.NaN(), P95Wait: math.NaN(), MeanJCT: math.NaN()}, // no job of the class: no figure
		},
		Wait16: 30, MeanJCT: 21, MeanWait: 10,
		// j2 reached its feasible leaf, j3 a leaf where one node was free.
		Tight: 0.5, Gangs: 2,
		SlowdownGPUHours: 16 * 20 * 0.2 / 3600,
		// 0-10: 15 free, j1 (1) waits: 1 x 10; 10-20: 16 free, j1 and j2
		// (17) wait: 16 x 10; 20-30: 11 free, j2 (16) does not fit; 30-40:
		// 16 free for j2: 16 x 10. 330 GPU-s.
		StrandedGPUHours: 330.0 / 3600,
		MeanSlowdown:     445.0 / 381, Backfilled: 0.2,
		HeldIdleGPUHours: 2, PeakHeldIdle: 3, Deadlocks: 2, Timeouts: 1,
		Wait32: math.NaN(), P95Wait32: math.NaN(),
	}
	got := Summarize(r)
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
}

// A requeued job: its wait leaves out what it ran before the requeue; what
// it ran is lost, counted as allocated but not useful.
func TestSummarizeRequeues(t *testing.T) {
	r := &Result{Policy: "p", GPUs: 64,
		Jobs: []Job{{Name: "small", Submit: 0, Duration: 100, GPUs: 8}, {Name: "gang", Submit: 10, Duration: 100, GPUs: 32}, {Name: "end", Submit: 200, Duration: 1, GPUs: 1}},
		Outcomes: []Outcome{
			// ran 10..40, requeued, ran again 60..160
			{Start: 60, End: 160, Slowdown: 1, Requeues: 1, Ran: 30},
			{Start: 40, End: 140, Slowdown: 1},
			{Start: 200, End: 201, Slowdown: 1},
		},
		DefragPlans: 1, Requeues: []Requeue{{Job: 0, Start: 10, At: 40, GPUs: 8}}}
	got := Summarize(r)
	// small waited 10 s (0..10) and 20 s (40..60): 60 - 0 - 30 = 30
	if got.Classes[1].MeanWait != 30 || got.Wait32 != 30 || got.P95Wait32 != 30 {
		t.Errorf("waits: 2-8 %g, 32+ %g / %g; want 30, 30, 30", got.Classes[1].MeanWait, got.Wait32, got.P95Wait32)
	}
	// lost 8 GPUs x 30 s = 240 GPU-s; allocated 800 + 3200 + 1 + 240
	if got.Requeues != 1 || got.DefragPlans != 1 || math.Abs(got.LostGPUHours-240.0/3600) > 1e-12 ||
		math.Abs(got.LostShare-240.0/4241) > 1e-12 || math.Abs(got.RequeuesPerJob-1.0/3) > 1e-12 {
		t.Errorf("requeues %d, plans %d, lost %g GPU-h (share %g), per job %g", got.Requeues, got.DefragPlans, got.LostGPUHours, got.LostShare, got.RequeuesPerJob)
	}
	// window 0..200 s x 64 GPUs = 12800; busy 800 + 3200 + 240 (the lost
	// run counts as allocated), useful 4000
	if math.Abs(got.Util-4240.0/12800) > 1e-12 || math.Abs(got.Useful-4000.0/12800) > 1e-12 {
		t.Errorf("util %g, useful %g", got.Util, got.Useful)
	}
}
