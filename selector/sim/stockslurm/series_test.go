package stockslurm

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// seriesTestdata holds stock Slurm's recorded runs per release, one
// directory each (slurm-<release>: make record-reference SLURM_SERIES=...).
const seriesTestdata = "testdata"

// handRecorded is 24.11.5's Reference 1 recorded by hand before make
// record-reference existed (../shared/data/slurm-24.11-reference: tree_*
// with topology/tree, block_* with topology/block).
func handRecorded() string {
	return filepath.Join(filepath.Dir(refDir()), "slurm-24.11-reference")
}

// seriesRun is one recorded run file of a series and its tally.
type seriesRun struct {
	release, dir, run string
	res, flat         fileResult // the slurm model's tally, slurm-flat's
}

// replaySeriesRun replays <dir>/<run>_placements.csv on the model mk
// builds for cluster conf (confDir/conf/<conf>: the configuration the lab
// wrote).
func replaySeriesRun(dir, confDir, conf, run string, mk func(*topology.Cluster) *Model) (fileResult, error) {
	c, err := refCluster(confDir, conf)
	if err != nil {
		return fileResult{}, fmt.Errorf("%s: %w", filepath.Join(confDir, "conf", conf), err)
	}
	p := run + "_placements.csv"
	r := newRefRun(p, mk(c))
	if err := stepsFile(p, run+"_snapshots.csv", "gpu_idx_per_node", true)(dir, r); err != nil {
		return fileResult{}, err
	}
	return fileResult{name: p, total: r.total, matched: r.matched, misses: r.misses}, nil
}

// recordedSeries lists testdata's slurm-<release> directories by release.
func recordedSeries(t *testing.T) map[string]string {
	dirs, err := filepath.Glob(filepath.Join(seriesTestdata, "slurm-*"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range dirs {
		out[strings.TrimPrefix(filepath.Base(d), "slurm-")] = d
	}
	return out
}

// The slurm model is the model of every series in CheckedSeries: on each
// series' recorded runs (testdata/slurm-<release>, made by make
// record-reference in the lab, plus 24.11.5's hand recording) it must
// reproduce at least 98% of the placements in every file, as on 22.05.8's
// (TestReference). A recording without its series in CheckedSeries, or a
// series without its recording, fails: the list is what --slurm-series
// offers. topology/block places differently from the first job on
// (../shared/data/slurm-24.11-reference/README.md); the model does not
// claim it (no topology/block variant), so the block runs are not replayed.
func TestReferenceSeries(t *testing.T) {
	recorded := recordedSeries(t)
	var runs []seriesRun
	for _, s := range CheckedSeries()[1:] { // [0], 22.05.8: TestReference
		dir, ok := recorded[s.Release]
		if !ok {
			t.Errorf("series %s: no recording of Slurm %s in %s/slurm-%s (make record-reference)", s.Name, s.Release, seriesTestdata, s.Release)
			continue
		}
		delete(recorded, s.Release)
		files, err := filepath.Glob(filepath.Join(dir, "ref1_*_placements.csv"))
		if err != nil || len(files) == 0 {
			t.Errorf("series %s: no ref1_*_placements.csv in %s", s.Name, dir)
			continue
		}
		flatMisses := false
		for _, f := range files {
			run := strings.TrimSuffix(filepath.Base(f), "_placements.csv")
			res, err := replaySeriesRun(dir, dir, "", run, NewTree)
			if err != nil {
				t.Fatal(err)
			}
			flat, err := replaySeriesRun(dir, dir, "", run, NewFlat)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, seriesRun{s.Release, filepath.Join("selector", "sim", "stockslurm", dir), run, res, flat})
			flatMisses = flatMisses || !flat.ok()
		}
		// the recording must tell the tree model from one without the
		// topology plugin, or matching it would say little
		if !flatMisses {
			t.Errorf("series %s: the slurm-flat model also reproduces every run of %s at 98%% or more: the recording does not check topology/tree", s.Name, dir)
		}
	}
	for rel := range recorded {
		t.Errorf("%s/slurm-%s: a recording of a series the model does not list (CheckedSeries): add it, or say why the model does not match it", seriesTestdata, rel)
	}
	runs = append(runs, handRecordedRuns(t)...)
	checkSeriesRuns(t, runs)
}

// handRecordedRuns replays 24.11.5's hand recording on 22.05's Reference 1
// configuration, which it used.
func handRecordedRuns(t *testing.T) []seriesRun {
	dir := handRecorded()
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("Slurm 24.11 reference data not found at %s (set %s for the 22.05 directory beside it): %v", dir, refDirEnv, err)
	}
	var out []seriesRun
	for _, run := range []string{"tree_plain_run1", "tree_pernode_run1"} {
		res, err := replaySeriesRun(dir, refDir(), "ref1", run, NewTree)
		if err != nil {
			t.Fatal(err)
		}
		flat, err := replaySeriesRun(dir, refDir(), "ref1", run, NewFlat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seriesRun{"24.11.5", "../shared/data/slurm-24.11-reference", run, res, flat})
	}
	return out
}

// checkSeriesRuns fails a run below 98% (or with nothing to compare), logs
// the table and the misses, and with -matchdoc writes the table into the
// document's slurm-reference-series section.
func checkSeriesRuns(t *testing.T, runs []seriesRun) {
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].release < runs[j].release })
	rows := []string{"| Slurm release | recording | run | placements matched | rate | slurm-flat model (no topology plugin) |", "|---|---|---|---|---|---|"}
	for _, r := range runs {
		t.Logf("Slurm %s %s: %d / %d placements reproduced (%.1f%%)", r.release, r.run, r.res.matched, r.res.total, pct(r.res.matched, r.res.total))
		for _, m := range r.res.misses {
			t.Logf("miss: %s", m)
		}
		if !r.res.ok() || r.res.total == 0 {
			t.Errorf("Slurm %s %s: %d of %d placements reproduced, want at least %.0f%%", r.release, r.run, r.res.matched, r.res.total, 100*minMatch)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %d / %d | %.1f%% | %d / %d |", r.release, filepath.ToSlash(r.dir), r.run,
			r.res.matched, r.res.total, pct(r.res.matched, r.res.total), r.flat.matched, r.flat.total))
	}
	table := strings.Join(rows, "\n") + "\n"
	t.Logf("per-series table:\n%s", table)
	if *matchDoc != "" {
		if err := writeSection(*matchDoc, "slurm-reference-series", seriesDocText(table)); err != nil {
			t.Fatal(err)
		}
	}
}

// seriesDocText is the slurm-reference-series section.
func seriesDocText(table string) string {
	var b strings.Builder
	b.WriteString("## Stock Slurm model vs. a real slurmctld, per Slurm series\n\n")
	b.WriteString("The `slurm` model (one model, no per-series variant) replayed through stock Slurm's Reference 1 runs recorded on\n")
	b.WriteString("each newer series, as the section above does for 22.05.8: `make record-reference SLURM_SERIES=trixie|sid` drives the\n")
	b.WriteString("sequences through the lab's real slurmctld (Debian trixie's 24.11.5, sid's 26.05.5, in Debian roots; topology/tree,\n")
	b.WriteString("nothing of gangtopo loaded) and saves what it did as test data (`selector/sim/stockslurm/testdata/slurm-<release>/`,\n")
	b.WriteString("README there); `../shared/data/slurm-24.11-reference` is 24.11.5 recorded by hand earlier. These are the series\n")
	b.WriteString("`gangtopo simulate` and `gangtopo replay` accept as `--slurm-series`. Written by `make bench-stockslurm`\n")
	b.WriteString("(TestReferenceSeries; the test fails below 98% in any run, and when the slurm-flat model, the same without the\n")
	b.WriteString("topology plugin, reproduces every run of a recording at 98% or more: then the recording would not check topology/tree):\n\n")
	b.WriteString("    go test ./selector/sim/stockslurm -run TestReference -count=1 -args -matchdoc $PWD/docs/benchmarks.md\n\n")
	b.WriteString(table)
	b.WriteString("\ntopology/block (24.11.5's block_* runs in the hand recording) places differently from the first job on; the model\n")
	b.WriteString("does not claim it and those runs are not replayed.\n")
	return b.String()
}

// LookupSeries takes a series name and refuses anything else, listing the
// series the model was checked against.
func TestLookupSeries(t *testing.T) {
	for _, tc := range []struct {
		name, want, err string
	}{
		{name: "22.05", want: "22.05.8"},
		{name: "26.05", want: "26.05.5"},
		{name: "24.11", want: "24.11.5"},
		// a release is not a series; 23.02 was never recorded
		{name: "24.11.5", err: `unknown Slurm series "24.11.5": the slurm model was checked against 22.05, 24.11, 26.05 (want one of those)`},
		{name: "23.02", err: `unknown Slurm series "23.02": the slurm model was checked against 22.05, 24.11, 26.05 (want one of those)`},
		{name: "", err: `unknown Slurm series "": the slurm model was checked against 22.05, 24.11, 26.05 (want one of those)`},
	} {
		s, err := LookupSeries(tc.name)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if diff := cmp.Diff(tc.err, got); diff != "" {
			t.Errorf("LookupSeries(%q) error (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.want, s.Release); diff != "" {
			t.Errorf("LookupSeries(%q) release (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := LookupSeries(DefaultSeries); err != nil {
		t.Errorf("the default series %s is not a checked one: %v", DefaultSeries, err)
	}
}
