package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// A recording written by record is the reference data's own format: the
// recorded 22.05.8 runs read and written back come out as the reference
// files, line for line (placements: every column, the node list and the
// GPUs allocated after each step recomputed; snapshots: every node after
// every step). The reference's lines end in CRLF (Python's csv module),
// record's in LF.
func TestRecordingRoundTrip(t *testing.T) {
	const ref = "../../../shared/data/slurm-22.05-reference"
	dir := t.TempDir()
	for _, run := range []string{"plain", "pernode", "plain_off2"} {
		r, err := readRecorded(ref, run)
		if err != nil {
			needs.Skip(t, "reference data not found: %v", err)
		}
		if err := writeRecording(dir, r); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"placements.csv", "snapshots.csv"} {
			name := "ref1_" + run + "_run1_" + f
			want, err := os.ReadFile(filepath.Join(ref, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.ReplaceAll(string(want), "\r\n", "\n"), string(got)); diff != "" {
				t.Errorf("%s written back (-want +got):\n%s", name, diff)
			}
		}
	}
}

// recordedRelease names a recording directory's release.
func TestRecordedRelease(t *testing.T) {
	for dir, want := range map[string]string{
		"../shared/data/slurm-22.05-reference":                "22.05.8", // the reference's README
		"selector/sim/stockslurm/testdata/slurm-26.05.5":      "26.05.5",
		"selector/sim/stockslurm/testdata/slurm-24.11.5/":     "24.11.5",
		"/abs/selector/sim/stockslurm/testdata/slurm-24.11.5": "24.11.5",
	} {
		if got := recordedRelease(dir); got != want {
			t.Errorf("recordedRelease(%q) = %q, want %q", dir, got, want)
		}
	}
}
