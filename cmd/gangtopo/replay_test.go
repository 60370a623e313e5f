package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// replayNormalizeTimes replaces the wall-clock figures of replay output, which
// differ from run to run, with T: the last field of the rows under a
// header ending in "run s" (table and Markdown; with its band, when it
// has one) and the run_s field of the CSV.
func replayNormalizeTimes(s string) string {
	lines := strings.Split(s, "\n")
	runCol := -1
	inTable := false
	for i, line := range lines {
		switch {
		case replayJSONRunTime.MatchString(line):
			lines[i] = replayJSONRunTime.ReplaceAllString(line, "${1}T$2")
		case strings.HasPrefix(line, "cluster,policy,"):
			runCol = slices.Index(strings.Split(line, ","), "run_s")
		case runCol >= 0 && strings.Count(line, ",") >= runCol:
			f := strings.Split(line, ",")
			f[runCol] = "T"
			lines[i] = strings.Join(f, ",")
		case strings.HasSuffix(strings.TrimRight(line, " |"), "run s"):
			inTable = true
		case inTable && strings.TrimSpace(line) == "":
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			lines[i] = replayLastNumber.ReplaceAllString(line, "${1}T$2")
		}
	}
	return strings.Join(lines, "\n")
}

var replayJSONRunTime = regexp.MustCompile(`^(\s*"run_s": )[0-9.e-]+(,?)$`)

var replayLastNumber = regexp.MustCompile(`(\s)[0-9]+\.[0-9]+(?: \[[0-9.]+\.\.[0-9.]+\])?( \|)?$`)

// TestReplayGolden runs gangtopo replay on a 48-job fixture in the Philly
// format and compares stdout, stderr and the exit code with
// testdata/golden/replay-*.txt (rewrite with -update). Invalid input must
// fail with exit status 2 and a message naming the file, line and field.
func TestReplayGolden(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	small := filepath.Join("testdata", "replay", "philly-small.csv")
	base := []string{"replay", "--topology", lab, "--compress", "1"}
	bad := []string{"replay", "--topology", lab}
	tests := []struct {
		name string
		args []string
	}{
		{"replay-table", append(base, "--trace", small)},
		{"replay-csv", append(base, "--trace", small, "-o", "csv")},
		{"replay-markdown-one-node", append(base, "--trace", small, "-o", "markdown", "--one-node-up-to", "8", "--policies", "gangtopo,slurm")},
		// the fixture spans 3.4 h: the peak load is measured over all of it
		{"replay-peak-load", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "1.3", "--policies", "gangtopo,naive-pods", "--slowdown", "none"}},
		{"replay-sweep", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "0.6,1.2", "--policies", "gangtopo,slurm"}},
		{"replay-sweep-csv", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "0.6,1.2", "--policies", "slurm,gangtopo", "-o", "csv"}},
		{"replay-bad-load", append(bad, "--trace", small, "--peak-load", "1,x")},
		{"replay-bad-gpus", append(base, "--trace", filepath.Join("testdata", "replay", "bad-gpus.csv"))},
		{"replay-bad-columns", append(base, "--trace", filepath.Join("testdata", "replay", "bad-columns.csv"))},
		{"replay-bad-time", append(base, "--trace", filepath.Join("testdata", "replay", "bad-time.csv"))},
		{"replay-bad-duration", append(base, "--trace", filepath.Join("testdata", "replay", "bad-duration.csv"))},
		{"replay-missing-trace", append(base, "--trace", filepath.Join("testdata", "replay", "nonexistent.csv"))},
		{"replay-unknown-policy", append(base, "--trace", small, "--policies", "gangtopo,kube")},
		{"replay-bad-slowdown", append(base, "--trace", small, "--slowdown", "leaf=0.5")},
		// the fixed factors of earlier releases, one band of the grounded
		// model, and the values the flag refuses
		{"replay-slowdown-factors", append(base, "--trace", small, "--policies", "gangtopo,slurm", "--slowdown", "factors")},
		{"replay-slowdown-central", append(base, "--trace", small, "--policies", "gangtopo,slurm", "--slowdown", "grounded:central", "-o", "csv")},
		{"replay-bad-slowdown-band", append(base, "--trace", small, "--slowdown", "grounded:middle")},
		{"replay-bad-slowdown-default", append(base, "--trace", small, "--slowdown", "default")},
		{"replay-bad-slowdown-factors", append(base, "--trace", small, "--slowdown", "factors:leaf=x")},
		{"replay-bad-window", append(base, "--trace", small, "--from", "2018-01-01")},
		{"replay-bad-output", append(base, "--trace", small, "-o", "yaml")},
		// what a newcomer tries first (issue 25): a window shorter than a
		// week is loaded as asked, not to 700%; classes without jobs and
		// targets without gangs show no figure, not 0.00, NaNx or MISSED
		{"replay-short-window", []string{"replay", "--topology", lab, "--trace", small, "--policies", "gangtopo,slurm"}},
		{"replay-json", append(base, "--trace", small, "--policies", "gangtopo", "-o", "json")},
		{"replay-all-rejected", append(base, "--trace", small, "--policies", "gangtopo,naive-pods", "--cpus-per-gpu", "1000")},
		{"replay-no-such-tier", append(base, "--trace", small, "--gang-topology", "block")},
		{"replay-bad-compress", []string{"replay", "--topology", lab, "--trace", small, "--compress", "0"}},
		{"replay-defrag", []string{"replay", "--topology", lab, "--trace", small, "--compress", "7.22", "--gang-topology", "leaf:required",
			"--policies", "gangtopo,gangtopo+defrag,gangtopo-slurm,gangtopo-slurm+defrag", "--defrag", "min_gpus=8,min_wait=10m,max_cost=100"}},
		{"replay-bad-defrag", append(base, "--trace", small, "--policies", "gangtopo+defrag", "--defrag", "min_gpu=8")},
		{"replay-defrag-unknown-base", append(base, "--trace", small, "--policies", "slurm+defrag")},
		{"replay-quota", []string{"replay", "--topology", lab, "--trace", small, "--compress", "1.8",
			"--policies", "gangtopo,gangtopo+hard,gangtopo+quota,slurm+hard", "--quota", "accounts=3,idle=2h"}},
		{"replay-bad-quota", append(base, "--trace", small, "--policies", "gangtopo+quota", "--quota", "accounts=0")},
		{"replay-bad-quota-key", append(base, "--trace", small, "--quota", "share=4")},
		{"replay-quota-unknown-base", append(base, "--trace", small, "--policies", "slurm+quota")},
		{"replay-quota-naive-pods", append(base, "--trace", small, "--policies", "gangtopo+quota,naive-pods")},
		{"replay-quota-too-many-accounts", append(base, "--trace", small, "--policies", "gangtopo", "--quota", "accounts=16")},
		// static per-team partitions beside one shared cluster with hard
		// limits and gangtopo with dynamic quotas and defragmentation, every
		// account's share its partition's whole nodes
		{"replay-static", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "0.05",
			"--policies", "static,slurm+hard,gangtopo-slurm+quota+defrag", "--quota", "accounts=3,shares=nodes"}},
		// the sustainable load of each, and the targets
		{"replay-sustain", []string{"replay", "--topology", lab, "--trace", small, "--sustain", "--sustain-from", "0.5",
			"--policies", "static,slurm+hard,gangtopo-slurm+quota+defrag", "--quota", "accounts=3,shares=nodes", "-o", "markdown"}},
		{"replay-sustain-csv", []string{"replay", "--topology", lab, "--trace", small, "--sustain", "--sustain-from", "0.5",
			"--policies", "slurm,gangtopo-slurm", "--slowdown", "grounded:high", "-o", "csv"}},
		{"replay-bad-sustain-load", append(bad, "--trace", small, "--sustain", "--peak-load", "1.2")},
		{"replay-bad-sustain-tolerance", append(bad, "--trace", small, "--sustain", "--sustain-tolerance", "0")},
		{"replay-bad-quota-shares", append(base, "--trace", small, "--policies", "static", "--quota", "shares=cores")},
		{"replay-bad-hard-defrag", append(base, "--trace", small, "--policies", "gangtopo+hard+defrag")},
		// the header names the series the slurm model stands for, and the
		// recording it was checked against; a series never recorded (or a
		// release rather than a series) is refused with the ones allowed
		{"replay-slurm-series", append(base, "--trace", small, "--policies", "gangtopo,slurm", "--slurm-series", "26.05")},
		{"replay-bad-slurm-series", append(base, "--trace", small, "--slurm-series", "23.02")},
		// the page's file: a directory that does not exist, or with
		// --sustain (no loads to draw)
		{"replay-bad-html-dir", append(base, "--trace", small, "--html", filepath.Join("testdata", "nonexistent", "page.html"))},
		{"replay-bad-html-sustain", append(bad, "--trace", small, "--sustain", "--html", "page.html")},
		{"replay-bad-slurm-release", append(base, "--trace", small, "--slurm-series", "26.05.5")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.args, replayNormalizeTimes)
		})
	}
}

func TestReplayTraceDirFromEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "philly-via-pollux"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "replay", "philly-small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "philly-via-pollux", "philly.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GANGTOPO_TRACES", dir)
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "--topology", lab, "--compress", "1", "--policies", "gangtopo"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "48 jobs submitted") {
		t.Errorf("the trace in $GANGTOPO_TRACES was not read:\n%s", stdout.String())
	}
}

// TestReplaySameWhereverTheTraceIs: each job's workload class is drawn
// from its name; the same trace read through another path replays the
// same (the name held the path, and a run from another directory drew
// other classes).
func TestReplaySameWhereverTheTraceIs(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	dir, err := filepath.Abs(filepath.Join("testdata", "replay"))
	if err != nil {
		t.Fatal(err)
	}
	var outs [][][]string
	for _, trace := range []string{filepath.Join("testdata", "replay", "philly-small.csv"), filepath.Join(dir, "..", "replay", "philly-small.csv")} {
		out, errOut, code := runCLI(t, "replay", "--topology", lab, "--compress", "1", "--policies", "gangtopo,slurm", "--trace", trace, "-o", "csv")
		if code != 0 {
			t.Fatalf("replay --trace %s: exit %d: %s", trace, code, errOut)
		}
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) < 2 {
			t.Fatalf("replay --trace %s: %v\n%s", trace, err, out)
		}
		run := slices.Index(rows[0], "run_s")
		for _, r := range rows[1:] {
			r[run] = "" // the wall time of the run
		}
		outs = append(outs, rows)
	}
	if diff := cmp.Diff(outs[0], outs[1]); diff != "" {
		t.Errorf("the same trace through two paths replays differently (-relative +absolute):\n%s", diff)
	}
}
