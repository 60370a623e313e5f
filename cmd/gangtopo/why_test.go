package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// why reads scontrol show job with or without -o: a real 22.05 output of
// the multi-line form (../shared/data/slurm-22.05-samples).
func TestParseSlurmJobMultiLine(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "slurm-22.05-samples", "scontrol_show_job_d.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		needs.Skip(t, "no Slurm samples: %v", err)
	}
	j, err := parseSlurmJob(string(data), "3")
	if err != nil {
		t.Fatal(err)
	}
	want := slurmJob{id: "3", state: "RUNNING", reason: "None", nodes: "node[01-02]", features: "[leaf1|leaf2]", comment: "leaf"}
	if diff := cmp.Diff(want, j, cmp.AllowUnexported(slurmJob{})); diff != "" {
		t.Errorf("parseSlurmJob (-want +got):\n%s", diff)
	}
}
