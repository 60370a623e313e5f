package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

// TestGolden runs command lines and compares their output (stdout, then
// stderr, then the exit code) with testdata/golden/<name>.txt.
func TestGolden(t *testing.T) {
	t.Setenv("GANGTOPO_CONFIG", "") // quota-no-config: the default path
	t.Setenv("COLUMNS", "")
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	nvl := filepath.Join("..", "..", "docs", "examples", "gb200-nvl72.yaml")
	busy := filepath.Join("testdata", "lab16-busy.json")
	savedLab := []string{"--config", "testdata/defrag/gangtopo.yaml", "--squeue-json", "testdata/defrag/squeue.json",
		"--sinfo-json", "testdata/defrag/sinfo.json", "--now", "2026-12-03T22:07:53Z"}
	quotaCapture := filepath.Join("internal", "slurmstate", "testdata", "quota_")
	savedQuota := []string{"--config", "testdata/quota/gangtopo.yaml", "--topology", lab, "--sinfo-json", quotaCapture + "sinfo.json",
		"--squeue-json", quotaCapture + "squeue.json"}
	tests := []struct {
		name string
		args []string
	}{
		{"quota-table", append([]string{"quota"}, savedQuota...)},
		{"quota-json", append([]string{"quota", "-o", "json"}, savedQuota...)},
		{"quota-bad-output", append([]string{"quota", "-o", "yaml"}, savedQuota...)},
		{"quota-not-enabled", []string{"quota", "--config", "testdata/defrag/gangtopo.yaml", "--topology", lab}},
		{"frag-empty", []string{"frag", "--topology", lab, "--no-color"}},
		{"frag-busy", []string{"frag", "--topology", lab, "--state", busy, "--no-color", "--width", "80"}},
		{"frag-json", []string{"frag", "--topology", lab, "--state", busy, "-o", "json"}},
		{"place-leaf-explain", []string{"place", "--topology", lab, "--state", busy, "--gpus", "32", "--gang-topology", "leaf", "--explain"}},
		{"place-small", []string{"place", "--topology", lab, "--state", busy, "--gpus", "2", "--cpus-per-gpu", "2"}},
		{"place-share", []string{"place", "--topology", lab, "--state", busy, "--gpus", "1", "--share", "400", "-o", "json"}},
		{"place-impossible", []string{"place", "--topology", nvl, "--gpus", "128", "--gang-topology", "nvlink"}},
		{"place-bad-tier", []string{"place", "--topology", lab, "--gpus", "8", "--gang-topology", "nvlnk"}},
		{"place-bad-gpus", []string{"place", "--topology", lab, "--gpus", "-3"}},
		{"place-missing-topology", []string{"place", "--gpus", "8"}},
		{"place-bad-state", []string{"place", "--topology", lab, "--state", "testdata/nonexistent.json", "--gpus", "8"}},
		// exactly what was asked, or a refusal naming the real reason (issue 25)
		{"place-per-node-not-whole", []string{"place", "--topology", lab, "--gpus", "16", "--gpus-per-node", "3"}},
		{"place-per-node-fixes-nodes", []string{"place", "--topology", lab, "--gpus", "6", "--gpus-per-node", "3"}},
		{"place-uneven-nodes", []string{"place", "--topology", lab, "--state", busy, "--gpus", "8", "-N", "3"}},
		{"place-nodes-at-node-tier", []string{"place", "--topology", lab, "--gpus", "8", "-N", "3", "--gang-topology", "node"}},
		{"defrag-spine", []string{"defrag", "--topology", lab, "--state", busy, "--gpus", "64", "--gang-topology", "spine"}},
		{"defrag-protected", []string{"defrag", "--topology", lab, "--state", busy, "--gpus", "64", "--gang-topology", "spine", "--protect", "102"}},
		{"defrag-fits", []string{"defrag", "--topology", lab, "--state", busy, "--gpus", "8"}},
		{"why-waiting", []string{"why", "5", "--job-file", "testdata/job-waiting.txt", "--topology", lab, "--state", busy}},
		{"why-placed", []string{"why", "5", "--job-file", "testdata/job-placed.txt", "--topology", lab}},
		{"why-wider", []string{"why", "7", "--job-file", "testdata/job-wider.txt", "--topology", lab}},
		{"why-untouched", []string{"why", "8", "--job-file", "testdata/job-untouched.txt"}},
		{"why-no-such-job", []string{"why", "99", "--job-file", "testdata/job-placed.txt"}},
		// saved squeue --json of job 2, named 'x JobState=RUNNING' (26.05.5): pending
		{"why-forged-name-json", []string{"why", "2", "--job-file", "testdata/why-forged-name.json"}},
		// scontrol show job without -o: the same job over several lines
		// (it printed a blank state, exit 0)
		{"why-waiting-multiline", []string{"why", "5", "--job-file", "testdata/job-waiting-multiline.txt", "--topology", lab, "--state", busy}},
		{"unknown-command", []string{"fragment"}},
		// a fragmented lab16 with a pending 32-GPU leaf gang (job 24), saved
		// from the e2e lab; two hours after the fillers started
		{"frag-pending", append([]string{"frag", "--pending", "--topology", lab, "--no-picture"}, savedLab...)},
		// defrag --job on saved outputs asks Slurm nothing (it ran scontrol)
		{"defrag-job-saved", append([]string{"defrag", "--job", "24", "--topology", lab}, savedLab...)},
		{"defrag-job-file", append([]string{"defrag", "--job", "24", "--topology", lab, "--job-file", "testdata/defrag/job-24.txt"}, savedLab...)},
		{"defrag-job-not-pending", append([]string{"defrag", "--job", "19", "--topology", lab}, savedLab...)},
		{"why-defrag", append([]string{"why", "24", "--job-file", "testdata/defrag/job-24.txt", "--topology", lab}, savedLab...)},
		{"why-defrag-nothing-preemptible", []string{"why", "24", "--job-file", "testdata/defrag/job-24.txt", "--topology", lab,
			"--squeue-json", "testdata/defrag/squeue.json", "--sinfo-json", "testdata/defrag/sinfo.json", "--config", "testdata/defrag/no-defrag.yaml", "--now", "2026-12-03T22:07:53Z"}},
		{"frag-pending-with-state", []string{"frag", "--pending", "--topology", lab, "--state", busy}},
		// help and messages a newcomer meets (issue 25)
		{"quota-no-config", []string{"quota", "--topology", lab}},
		{"quota-sync-help", []string{"quota", "sync", "--help"}},
		{"why-help", []string{"why", "--help"}},
		{"frag-help", []string{"frag", "--help"}},
		{"replay-help", []string{"replay", "--help"}},
		{"snapshot-help", []string{"snapshot", "--help"}},
		{"daemon-help", []string{"daemon", "--help"}},
		// EpilogSlurmctld's hook: bad input is refused; no controller is no failure
		{"wake-bad-job", []string{"wake", "--job", "12x", "--socket", "testdata/nonexistent.sock"}},
		{"wake-no-controller", []string{"wake", "--job", "12", "--socket", "testdata/nonexistent.sock"}},
		{"wake-no-controller-strict", []string{"wake", "--strict", "--job", "12", "--socket", "testdata/nonexistent.sock"}},
		{"gen-features-help", []string{"gen", "features", "--help"}},
		{"place-help", []string{"place", "--help"}},
		{"gen-unknown", []string{"gen", "bogus"}},
		{"topology-unknown", []string{"topology", "bogus"}},
		{"version-flag", []string{"--version"}},
		// values that were accepted silently
		{"gen-gres-negative-threads", []string{"gen", "gres", "--topology", lab, "--threads-per-core", "-2"}},
		{"gen-gres-negative-numa", []string{"gen", "gres", "--topology", lab, "--numa-nodes", "-1"}},
		{"frag-hetero-empty", []string{"frag", "--topology", filepath.Join("..", "..", "docs", "examples", "hetero.yaml"), "--no-picture"}},
		{"frag-negative-width", []string{"frag", "--topology", lab, "--width", "-1"}},
		{"place-memory-overflow", []string{"place", "--topology", lab, "--gpus", "2", "--mem-per-gpu", "9223372036854775807"}},
		{"place-negative-cpus", []string{"place", "--topology", lab, "--gpus", "2", "--cpus-per-gpu", "-1"}},
		{"simulate-unwritable-svg", []string{"simulate", "--svg", "/nonexistent/dir/x.svg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.args, nil)
		})
	}
}

func TestExitCodes(t *testing.T) {
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	for args, want := range map[string]int{
		"version":                          0,
		"place --gpus 8 --topology " + lab: 0,
		"place --gpus 99 --gang-topology leaf --topology " + lab: 1,
		"place --gpus 8 --bogus":                                 2,
		"frag --topology /nonexistent.yaml":                      2,
	} {
		if got := run(strings.Fields(args), &bytes.Buffer{}, &bytes.Buffer{}); got != want {
			t.Errorf("gangtopo %s: exit %d, want %d", args, got, want)
		}
	}
}

// checkGolden runs the CLI with args and compares its stdout (through
// normalize, when not nil), stderr and exit code with
// testdata/golden/NAME.txt; -update rewrites the file.
func checkGolden(t *testing.T, name string, args []string, normalize func(string) string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	out := stdout.String()
	if normalize != nil {
		out = normalize(out)
	}
	got := out + "--- stderr\n" + stderr.String() + "--- exit " + string(rune('0'+code)) + "\n"
	path := filepath.Join("testdata", "golden", name+".txt")
	golden.Check(t, path, []byte(got))
}
