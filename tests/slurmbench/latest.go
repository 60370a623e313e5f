package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// latestReport is the "slurm-throughput" section: the latest run on each
// Slurm release, one row each, in the order the releases were first
// measured, so a run on sid's 26.05 sits beside the host's 22.05 instead
// of replacing it.
func latestReport(path string, runs []runRecord) string {
	var b strings.Builder
	b.WriteString("## Slurm plugin: submission throughput and time per call, per Slurm series\n\n")
	fmt.Fprintf(&b, "Measured with `make bench-slurm-throughput` (`slurmbench throughput -n 500`; on a newer series "+
		"`make bench-slurm-throughput SLURM_SERIES=sid`, the lab's daemons and clients from the Debian root made by "+
		"`make roots`, the plugins built against that root's headers): the 16-node lab (tests/slurmlab) on this machine, "+
		"500 held jobs (`sbatch -H --gpus=G --cpus-per-gpu=1`, G from the Philly mix) with the gangtopo plugins "+
		"(`jobs: gpu`, so every job goes through the engine) and 500 without, in 5 alternating batches, 8 sbatch "+
		"processes at a time. This measures the plugin as deployed, inside a real slurmctld. Each row is the latest "+
		"run on that release (every run: the next table; the data: `%s`). CPU ms = user+system time per submission "+
		"while the batches ran, of slurmctld and of the whole machine (slurmctld, sbatch, munged, the 16 slurmd). "+
		"Time per call = what the plugin logged inside slurmctld (`took Nus`, ctld.Gate.Submit from the job to the "+
		"rewrite, engine included; the pipe hand-offs are not in it) on the 16-node snapshot; for a 1,000-node "+
		"snapshot see \"time per call on a 1,000-node snapshot\" above (an in-process Go benchmark, no Slurm: the "+
		"same on every series, so it is not run per series).\n\n", filepath.ToSlash(filepath.Join("bench", filepath.Base(path))))
	if len(runs) == 0 {
		b.WriteString("No run recorded yet.\n")
		return b.String()
	}
	b.WriteString("| Slurm | date | label | jobs/s stock / with gangtopo | ratio (target >= 0.9) | slurmctld CPU ms stock / with | machine CPU ms stock / with | time per call p50 / p99 / max µs (calls) | engine p50 / p99 µs | load (1 min) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	var order []string
	latest := map[string]runRecord{}
	for _, r := range runs {
		if _, ok := latest[r.Slurm]; !ok {
			order = append(order, r.Slurm)
		}
		latest[r.Slurm] = r
	}
	for _, rel := range order {
		r := latest[rel]
		verdict := "met"
		if r.Ratio < minRatio {
			verdict = "MISSED"
		}
		rate := func(wall float64) float64 { return float64(r.Jobs) / wall }
		fmt.Fprintf(&b, "| %s | %s | %s | %.1f / %.1f | **%.3f** %s | %.2f / %.2f | %.2f / %.2f | %.0f / %.0f / %.0f (%d) | %.0f / %.0f | %.2f |\n",
			rel, r.Date, r.Label, rate(r.WallStockS), rate(r.WallWithS), r.Ratio, verdict, r.CtldStockMs, r.CtldWithMs,
			r.MachineStockMs, r.MachineWithMs, r.TookP50, r.TookP99, r.TookMax, r.Calls, r.EngineP50, r.EngineP99, r.Load)
	}
	return b.String()
}
