package main

import (
	"path/filepath"
	"testing"
)

// sacctCapture is a dump committed from one Slurm series (see
// internal/traces/testdata/sacct/README.md).
func sacctCapture(release, file string) string {
	return filepath.Join("internal", "traces", "testdata", "sacct", "slurm-"+release, file)
}

// TestReplaySacctGolden runs gangtopo replay --sacct on the captures of
// each series the tests run (good input: the report, the jobs left out,
// the timing check) and on bad input (an error naming the file, line and
// field, exit status 2), against testdata/golden/replay-sacct-*.txt
// (rewrite with -update).
func TestReplaySacctGolden(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	dir := filepath.Join("testdata", "sacct")
	base := []string{"replay", "--topology", lab}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	tests := []struct {
		name string
		args []string
	}{
		{"replay-sacct-22.05-json", with("--sacct", sacctCapture("22.05.8", "sacct.json"), "--scontrol-config", sacctCapture("22.05.8", "config.txt"))},
		{"replay-sacct-22.05-pipe", with("--sacct", sacctCapture("22.05.8", "sacct.txt"), "--scontrol-config", sacctCapture("22.05.8", "config.txt"))},
		{"replay-sacct-24.11-json", with("--sacct", sacctCapture("24.11.5", "sacct.json"), "--scontrol-config", sacctCapture("24.11.5", "config.txt"))},
		{"replay-sacct-24.11-pipe", with("--sacct", sacctCapture("24.11.5", "sacct.txt"), "--policies", "slurm,gangtopo-slurm")},
		{"replay-sacct-26.05-json", with("--sacct", sacctCapture("26.05.5", "sacct.json"), "--scontrol-config", sacctCapture("26.05.5", "config.txt"))},
		{"replay-sacct-26.05-pipe", with("--sacct", sacctCapture("26.05.5", "sacct.txt"), "--policies", "slurm,gangtopo-slurm", "--timing", "events")},
		{"replay-sacct-check-22.05", with("--sacct", sacctCapture("22.05.8", "sacct.json"), "--scontrol-config", sacctCapture("22.05.8", "config.txt"), "--check-starts")},
		{"replay-sacct-check-26.05", with("--sacct", sacctCapture("26.05.5", "sacct.txt"), "--scontrol-config", sacctCapture("26.05.5", "config.txt"), "--check-starts")},
		{"replay-sacct-keep-names", with("--sacct", filepath.Join(dir, "small.txt"), "--keep-names", "--policies", "slurm,gangtopo-slurm+quota")},
		{"replay-sacct-salted", with("--sacct", filepath.Join(dir, "small.txt"), "--name-salt", "s3cret", "--policies", "slurm,gangtopo-slurm+quota")},
		// bad input
		{"replay-sacct-partial", with("--sacct", filepath.Join(dir, "partial.json"))},
		{"replay-sacct-bad-state", with("--sacct", filepath.Join(dir, "bad-state.txt"))},
		{"replay-sacct-missing", with("--sacct", filepath.Join(dir, "nonexistent.json"))},
		{"replay-sacct-no-boot-time", with("--sacct", filepath.Join(dir, "small.txt"), "--scontrol-config", filepath.Join(dir, "no-boot-config.txt"))},
		{"replay-sacct-bad-bf-interval", with("--sacct", filepath.Join(dir, "small.txt"), "--scontrol-config", filepath.Join(dir, "bad-bf-config.txt"))},
		{"replay-sacct-peak-load", with("--sacct", filepath.Join(dir, "small.txt"), "--peak-load", "1.2")},
		{"replay-sacct-and-trace", with("--sacct", filepath.Join(dir, "small.txt"), "--trace", "x.csv")},
		{"replay-check-without-sacct", with("--check-starts")},
		{"replay-check-without-slurm", with("--sacct", filepath.Join(dir, "small.txt"), "--check-starts", "--policies", "gangtopo-slurm")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.args, replayNormalizeTimes)
		})
	}
}
