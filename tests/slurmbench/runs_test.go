package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Runs appended to the file come back as written, and the every-run table
// is computed from them alone: per label, the spread of ratios (median of
// an even count: the mean of the middle two) and of slurmctld's extra CPU.
func TestRunsFileAndTable(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "benchmarks.md")
	runs := []runRecord{
		{Date: "2026-12-02", Label: "pipe", Jobs: 500, Ratio: 0.912, CtldStockMs: 4.0, CtldWithMs: 5.0, TookP50: 190, TookP99: 990},
		{Date: "2026-12-03", Label: "pipe", Jobs: 500, Ratio: 0.880, CtldStockMs: 4.0, CtldWithMs: 5.5, TookP50: 200, TookP99: 900},
		{Date: "2026-12-03", Label: "cgo call", CtldEnv: "GOMAXPROCS=1", Jobs: 500, Ratio: 0.865, CtldStockMs: 3.0, CtldWithMs: 5.0},
		{Date: "2026-12-03", Label: "pipe", Jobs: 500, Ratio: 0.950, CtldStockMs: 4.0, CtldWithMs: 4.5},
		{Date: "2026-12-03", Label: "pipe", Jobs: 500, Ratio: 0.930, CtldStockMs: 4.0, CtldWithMs: 4.8},
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
		// ratios 0.880 0.912 0.930 0.950: median (0.912+0.930)/2; extra 1.0 1.5 0.5 0.8
		"| pipe | 2026-12-02, 2026-12-03 | 4 | 0.880 / 0.921 / 0.950 | 3 of 4 | 0.50 / 0.90 / 1.50 |",
		"| cgo call | 2026-12-03 | 1 | 0.865 / 0.865 / 0.865 | 0 of 1 | 2.00 / 2.00 / 2.00 |",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the document lacks %q:\n%s", want, text)
		}
	}
}
