package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

// TestPictureFiles draws the pictures the commands write (--svg) and
// compares them with testdata/golden/*.svg (rewrite with -update; open
// them in a browser to look): frag's cluster grouped by its domains (the
// NVL72 racks each a row), defrag's plan before and after, replay's waits
// against load per policy.
func TestPictureFiles(t *testing.T) {
	examples := filepath.Join("..", "..", "docs", "examples")
	lab := filepath.Join(examples, "lab16.yaml")
	snap := filepath.Join(examples, "lab16-snapshot.json")
	small := filepath.Join("testdata", "replay", "philly-small.csv")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"frag-lab16", []string{"frag", "--topology", lab, "--state", snap, "--no-picture"}},
		{"frag-nvl72", []string{"frag", "--topology", filepath.Join(examples, "gb200-nvl72-8racks.yaml"), "--no-picture"}},
		{"defrag-spine", []string{"defrag", "--topology", lab, "--state", snap, "--gpus", "64", "--gang-topology", "spine"}},
		{"replay-sweep", []string{"replay", "--topology", lab, "--trace", small, "--peak-load", "0.6,0.9,1.2", "--policies", "gangtopo,slurm,naive-pods"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := filepath.Join(dir, tc.name+".svg")
			_, stderr, code := runCLI(t, append(tc.args, "--svg", svg)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", "picture-"+tc.name+".svg"), got)
		})
	}
}
