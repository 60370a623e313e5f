package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/clusterfile"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

const slurmTestdata = "internal/slurmstate/testdata/"

// runCLI runs gangtopo with args as main does.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func decodeSnapshot(t *testing.T, path string) *occupancy.Snapshot {
	t.Helper()
	c, err := clusterfile.Load(slurmTestdata + "lab8.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := occupancy.Decode(f, path, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSnapshotFromSavedOutputs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "snapshot.json")
	args := []string{"snapshot", "--from-slurm", "--topology", slurmTestdata + "lab8.yaml",
		"--sinfo-json", slurmTestdata + "sinfo.json", "--squeue-json", slurmTestdata + "squeue.json", "-o", out}
	_, stderr, code := runCLI(t, args...)
	if code != 0 || !strings.Contains(stderr, "8 nodes: 6 idle, 2 mixed; jobs: 1") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	first := decodeSnapshot(t, out)
	if first.Generation == 0 || len(first.Jobs) != 1 {
		t.Errorf("generation %d, %d jobs", first.Generation, len(first.Jobs))
	}
	if _, _, code := runCLI(t, args...); code != 0 {
		t.Fatal("second run failed")
	}
	if second := decodeSnapshot(t, out); second.Generation <= first.Generation {
		t.Errorf("generation went from %d to %d", first.Generation, second.Generation)
	}
	// saved outputs alone say where the state comes from: --from-slurm
	// is not needed with them (issue 25)
	saved := []string{"snapshot", "--topology", slurmTestdata + "lab8.yaml", "-o", "-",
		"--sinfo-json", slurmTestdata + "sinfo.json", "--squeue-json", slurmTestdata + "squeue.json"}
	if stdout, stderr, code := runCLI(t, saved...); code != 0 || !strings.Contains(stdout, `"cluster": "lab"`) {
		t.Errorf("snapshot from saved outputs without --from-slurm: exit %d, stderr %q", code, stderr)
	}
	// the scontrol text forms describe the same cluster
	args = []string{"snapshot", "--from-slurm", "--topology", slurmTestdata + "lab8.yaml", "-o", "-",
		"--scontrol-nodes", slurmTestdata + "scontrol_nodes_handmade.txt", "--scontrol-jobs", slurmTestdata + "scontrol_jobs_handmade.txt"}
	stdout, stderr, code := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, `"cluster": "lab"`) || !strings.Contains(stderr, "warning: node in Slurm but not in the topology on 1 node: node09") {
		t.Errorf("exit %d, stdout %.80q, stderr %q", code, stdout, stderr)
	}
}

func TestSnapshotErrors(t *testing.T) {
	topo := slurmTestdata + "lab8.yaml"
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	failing := filepath.Join(dir, "bin")
	os.Mkdir(failing, 0o755)
	os.WriteFile(filepath.Join(failing, "sinfo"), []byte("#!/bin/sh\necho 'sinfo: error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n"), 0o755)
	os.WriteFile(filepath.Join(failing, "squeue"), []byte("#!/bin/sh\necho '{}'\n"), 0o755)
	out := filepath.Join(dir, "s.json")
	saved := []string{"--sinfo-json", slurmTestdata + "sinfo.json", "--squeue-json", slurmTestdata + "squeue.json"}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no source", []string{"--topology", topo, "-o", out}, 2,
			"gangtopo: snapshot: say where the state comes from: --from-slurm (Slurm's commands), or their saved outputs (--sinfo-json and --squeue-json)"},
		{"no output", []string{"--from-slurm", "--topology", topo}, 2, "--topology and -o are required"},
		{"bad topology", append([]string{"--from-slurm", "--topology", slurmTestdata + "sinfo.json", "-o", out}, saved...), 2, "sinfo.json"},
		{"unreadable saved output", []string{"--from-slurm", "--topology", topo, "-o", out, "--sinfo-json", "/nonexistent.json", "--squeue-json", slurmTestdata + "squeue.json"}, 2,
			"gangtopo: sinfo --json output: open /nonexistent.json: no such file or directory"},
		{"garbled saved output", []string{"--from-slurm", "--topology", topo, "-o", out, "--sinfo-json", slurmTestdata + "lab8.yaml", "--squeue-json", slurmTestdata + "squeue.json"}, 2,
			"gangtopo: sinfo --json output in " + slurmTestdata + "lab8.yaml: line 1: want '{', found '#'"},
		{"saved output of the wrong source", []string{"--from-slurm", "--topology", topo, "-o", out, "--nodes-from", "sinfo", "--scontrol-nodes", "x"}, 2,
			"--scontrol-nodes: nodes come from sinfo --json (--nodes-from)"},
		{"unknown source", []string{"--from-slurm", "--topology", topo, "-o", out, "--jobs-from", "sacct"}, 2, `--jobs-from: unknown source "sacct" (want squeue or scontrol)`},
		{"strict mismatch", []string{"--from-slurm", "--topology", topo, "-o", out, "--strict",
			"--scontrol-nodes", slurmTestdata + "scontrol_nodes_handmade.txt", "--scontrol-jobs", slurmTestdata + "scontrol_jobs_handmade.txt"}, 2, "disagree on nodes or GPU counts"},
		{"shared directory", append([]string{"--from-slurm", "--topology", topo, "-o", filepath.Join(shared, "s.json")}, saved...), 2,
			"is writable by its group and everyone (mode 0777): others could replace what we publish (chmod go-w " + shared + "); --allow-insecure-dir publishes anyway"},
		{"missing directory", append([]string{"--from-slurm", "--topology", topo, "-o", filepath.Join(dir, "nope", "s.json")}, saved...), 2, "no such file or directory"},
		{"Slurm down", []string{"--from-slurm", "--topology", topo, "-o", out, "--slurm-bin", failing}, 1,
			"gangtopo: sinfo --json: exit status 1: sinfo: error: Unable to contact slurm controller (connect failure)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"snapshot"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q\nwant exit %d and %q", code, stderr, tc.code, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
	if _, _, code := runCLI(t, append([]string{"snapshot", "--from-slurm", "--topology", topo, "-o", filepath.Join(shared, "s.json"), "--allow-insecure-dir"}, saved...)...); code != 0 {
		t.Errorf("--allow-insecure-dir: exit %d", code)
	}
}
