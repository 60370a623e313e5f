package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Runs appended to the file come back as written, and both tables are
// computed from them alone: the every-run table per release and label
// (the spread of ratios, median of an even count the mean of the middle
// two, and of slurmctld's extra CPU), the per-series table the latest run
// of each release.
func TestRunsFileAndTable(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "benchmarks.md")
	const host, sid = "22.05.8", "26.05.5"
	runs := []runRecord{
		{Date: "2026-12-02", Slurm: host, Label: "pipe", Jobs: 500, Ratio: 0.912, CtldStockMs: 4.0, CtldWithMs: 5.0, TookP50: 190, TookP99: 990},
		{Date: "2026-12-03", Slurm: host, Label: "pipe", Jobs: 500, Ratio: 0.880, CtldStockMs: 4.0, CtldWithMs: 5.5, TookP50: 200, TookP99: 900},
		{Date: "2026-12-03", Slurm: host, Label: "cgo call", CtldEnv: "GOMAXPROCS=1", Jobs: 500, Ratio: 0.865, CtldStockMs: 3.0, CtldWithMs: 5.0},
		{Date: "2026-12-03", Slurm: host, Label: "pipe", Jobs: 500, Ratio: 0.950, CtldStockMs: 4.0, CtldWithMs: 4.5},
		{Date: "2026-12-04", Slurm: sid, Label: "pipe", Jobs: 500, WallStockS: 10, WallWithS: 12.5, Ratio: 0.8, CtldStockMs: 4.0,
			CtldWithMs: 6.0, MachineStockMs: 30, MachineWithMs: 33.5, Calls: 500, TookP50: 210, TookP99: 1100, TookMax: 1800,
			EngineP50: 120, EngineP99: 700, Load: 3.25},
		{Date: "2026-12-03", Slurm: host, Label: "pipe", Jobs: 500, WallStockS: 9, WallWithS: 10, Ratio: 0.9, CtldStockMs: 4.0,
			CtldWithMs: 4.8, Calls: 500, TookP50: 190, TookP99: 950, TookMax: 1500, EngineP50: 110, EngineP99: 600, Load: 2},
	}
	for _, r := range runs {
		if err := recordRun(doc, r); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(runsPath(doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := readRuns(f)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(runs, back); diff != "" {
		t.Errorf("runs file round trip (-want +got):\n%s", diff)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<!-- BEGIN slurm-throughput-runs -->",
		// host pipe ratios 0.880 0.900 0.912 0.950: median (0.900+0.912)/2;
		// extra 1.0 1.5 0.5 0.8: median (0.8+1.0)/2
		"| 22.05.8 | pipe | 2026-12-02, 2026-12-03 | 4 | 0.880 / 0.906 / 0.950 | 3 of 4 | 0.50 / 0.90 / 1.50 |",
		"| 22.05.8 | cgo call | 2026-12-03 | 1 | 0.865 / 0.865 / 0.865 | 0 of 1 | 2.00 / 2.00 / 2.00 |",
		"| 26.05.5 | pipe | 2026-12-04 | 1 | 0.800 / 0.800 / 0.800 | 0 of 1 | 2.00 / 2.00 / 2.00 |",
		"<!-- BEGIN slurm-throughput -->",
		// the latest run of each release, the host's first (measured
		// first): 500 jobs in 9 s = 55.6/s, in 10 s = 50.0/s; sid 500 / 10
		// = 50.0/s, 500 / 12.5 = 40.0/s
		"| 22.05.8 | 2026-12-03 | pipe | 55.6 / 50.0 | **0.900** met | 4.00 / 4.80 | 0.00 / 0.00 | 190 / 950 / 1500 (500) | 110 / 600 | 2.00 |\n" +
			"| 26.05.5 | 2026-12-04 | pipe | 50.0 / 40.0 | **0.800** MISSED | 4.00 / 6.00 | 30.00 / 33.50 | 210 / 1100 / 1800 (500) | 120 / 700 | 3.25 |\n",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the document lacks %q:\n%s", want, text)
		}
	}
}
