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
		Jobs: []Job{{"j0", 0, 10, 1}, {"j1", 0, 10, 1}, {"j2", 10, 20, 16}, {"j3", 20, 10, 4}, {"j4", 100, 1, 1}},
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
			{MeanWait: math.NaN(), P95Wait: math.NaN()},
		},
		Wait16: 30, MeanJCT: 21, MeanWait: 10,
		// j2 reached its feasible leaf, j3 a leaf where one node was free.
		Tight: 0.5, Gangs: 2,
		SlowdownGPUHours: 16 * 20 * 0.2 / 3600,
		MeanSlowdown:     445.0 / 381, Backfilled: 0.2,
		HeldIdleGPUHours: 2, PeakHeldIdle: 3, Deadlocks: 2, Timeouts: 1,
	}
	got := Summarize(r)
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Summarize (-want +got):\n%s", diff)
	}
}
