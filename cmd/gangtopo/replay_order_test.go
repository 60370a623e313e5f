package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// TestReplayOrderings replays two weeks of the real Philly trace
// (2017-09-25 to 2017-10-09, the busiest fortnight, 16,295 jobs) on the
// 256-node DGX H100 cluster at peak load 1.5 (a short window lacks the
// backlog of long jobs the whole trace builds, so it needs more load to
// queue) and checks the orderings docs/benchmarks.md claims, so that a
// change to the engine, the Slurm model or the replay that breaks them
// fails CI. About two seconds.
func TestReplayOrderings(t *testing.T) {
	o := busiestFortnight(t)
	o.policies, o.peakLoad, o.slowdown = "gangtopo,gangtopo-slurm,slurm,slurm-flat,naive-pods", "1.5", "factors"
	set, err := o.setup()
	if err != nil {
		t.Fatal(err)
	}
	if err := runReplays(set, io.Discard); err != nil {
		t.Fatal(err)
	}
	jobs := set.runs[0].jobs
	s := map[string]queue.Summary{}
	for _, r := range set.runs[0].bands[0].results {
		sum := queue.Summarize(r)
		s[r.Policy] = sum
		t.Logf("%-10s wait %.1f min, 16+ %.1f min, 1-GPU %.1f min, tightest %.1f%%, slowdown %.0f GPU-h, held idle %.0f GPU-h",
			sum.Policy, sum.MeanWait/60, sum.Wait16/60, sum.Classes[0].MeanWait/60, 100*sum.Tight, sum.SlowdownGPUHours, sum.HeldIdleGPUHours)
		if sum.Rejected != 0 || sum.Jobs != len(jobs) {
			t.Errorf("%s: %d jobs run, %d rejected; want all %d run", sum.Policy, sum.Jobs, sum.Rejected, len(jobs))
		}
	}
	g := s["gangtopo"]
	if g.Tight < 0.95 {
		t.Errorf("gangtopo placed %.1f%% of gangs in their tightest feasible domain, want >= 95%%", 100*g.Tight)
	}
	for _, other := range []string{"slurm", "slurm-flat", queue.NaivePods} {
		o := s[other]
		if !(g.Tight > o.Tight) {
			t.Errorf("tightest feasible: gangtopo %.3f not above %s %.3f", g.Tight, other, o.Tight)
		}
		if !(g.SlowdownGPUHours < o.SlowdownGPUHours) {
			t.Errorf("GPU-hours lost to slowdown: gangtopo %.0f not below %s %.0f", g.SlowdownGPUHours, other, o.SlowdownGPUHours)
		}
		if !(g.MeanWait <= o.MeanWait) {
			t.Errorf("mean wait: gangtopo %.0f s above %s %.0f s", g.MeanWait, other, o.MeanWait)
		}
	}
	sl := s["slurm"]
	if g.Classes[0].MeanWait > sl.Classes[0].MeanWait {
		t.Errorf("1-GPU jobs wait longer under gangtopo (%.0f s) than under slurm (%.0f s)", g.Classes[0].MeanWait, sl.Classes[0].MeanWait)
	}
	if g.Wait16 > sl.Wait16 {
		t.Errorf("16+ GPU gangs wait longer under gangtopo (%.0f s) than under slurm (%.0f s)", g.Wait16, sl.Wait16)
	}
	t.Logf("16+ GPU gang wait, gangtopo / slurm: %.2f", g.Wait16/sl.Wait16)
	p := s[queue.NaivePods]
	if !(p.HeldIdleGPUHours > 0 && p.Timeouts > 0) {
		t.Errorf("naive-pods held %.1f GPU-h idle with %d timeouts; want partial gangs to hold GPUs", p.HeldIdleGPUHours, p.Timeouts)
	}
	if g.HeldIdleGPUHours != 0 || sl.HeldIdleGPUHours != 0 {
		t.Errorf("all-or-nothing policies held GPUs idle: gangtopo %.1f, slurm %.1f GPU-h", g.HeldIdleGPUHours, sl.HeldIdleGPUHours)
	}
	// The deployed path: the plugin's decision, carried out by Slurm.
	d := s["gangtopo-slurm"]
	t.Logf("deployed path: 16+ wait / slurm %.2f, 1-GPU %.0f vs %.0f s, tightest %.1f%%, %d rebinds, %.2f h self-inflicted wait",
		d.Wait16/sl.Wait16, d.Classes[0].MeanWait, sl.Classes[0].MeanWait, 100*d.Tight, d.Rebinds, d.SelfWaitHours)
	if d.Tight < 0.95 || d.Classes[0].MeanWait > sl.Classes[0].MeanWait || d.Wait16 > sl.Wait16 {
		t.Errorf("deployed path: tightest %.1f%%, 1-GPU wait %.0f s, 16+ wait %.0f s; want >= 95%% and no more than slurm's %.0f and %.0f s",
			100*d.Tight, d.Classes[0].MeanWait, d.Wait16, sl.Classes[0].MeanWait, sl.Wait16)
	}
	if d.SelfWaitsOverCycle != 0 {
		t.Errorf("deployed path: %d jobs waited on a stale binding longer than one controller cycle", d.SelfWaitsOverCycle)
	}
}

// busiestFortnight are the replay options of the tests on the real trace:
// Philly's busiest fortnight (2017-09-25 to 2017-10-09) on the 256-node
// DGX H100 cluster, gangs above 8 GPUs leaf:preferred, as the docs' replays
// run it; each test sets its policies, load and slowdown. Without the trace
// (../shared/data/traces) the test skips, and fails in CI.
func busiestFortnight(t *testing.T) replayOptions {
	t.Helper()
	dir, err := traces.Dir("")
	if err != nil {
		needs.Skip(t, "no trace directory (%v): the Philly trace lives in ../shared/data/traces", err)
	}
	if _, err := os.Stat(filepath.Join(dir, traces.PhillyJobs)); err != nil {
		needs.Skip(t, "no Philly trace: %v", err)
	}
	return replayOptions{topology: filepath.Join("..", "..", "docs", "examples", "dgx-h100-256.yaml"),
		traces: dir, from: "2017-09-25", to: "2017-10-09", limitFactor: 1, gangTopology: "leaf:preferred", gangAbove: 8,
		cpusPerGPU: 4, rendezvous: 600e9, output: "table", slurmSeries: stockslurm.DefaultSeries}
}
