package main

import (
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// The recorded stock runs give the figures the reference README states
// (its "Summary" table): this checks the metric code on known data.
func TestRecordedSummaries(t *testing.T) {
	const ref = "../../../shared/data/slurm-22.05-reference"
	tests := []struct {
		run  string
		want summary
	}{
		// phase A: 40 jobs, 120/128 GPUs, 1 whole free node; phase B: 85
		// free GPUs, 9 whole nodes; phase C: 45 placed, the 46th (1 GPU)
		// pends with Resources at 128/128; the 32-GPU gang spanned two
		// leaves although leaf4 had 4 whole free nodes; node01 broken while
		// node03/node04 had holes
		{"plain", summary{jobsA: 40, gpusA: 120, wholeA: 1, freeB: 85, wholeB: 9, placedC: 45, pendStep: 100, pendGPUs: 1,
			pendReason: "Resources", gangs: 3, spanning: 1, needless: 1, noWholeStep: 95}},
		{"pernode", summary{jobsA: 40, gpusA: 120, wholeA: 1, freeB: 85, wholeB: 9, placedC: 45, pendStep: 100, pendGPUs: 1,
			pendReason: "Resources", gangs: 3, noWholeStep: 95}},
	}
	for _, tc := range tests {
		r, err := readRecorded(ref, tc.run)
		if err != nil {
			needs.Skip(t, "reference data not found: %v", err)
		}
		got := summarize(r)
		// fields the README does not state are not compared
		t.Logf("%s: %+v", tc.run, got)
		got.pendFree, got.pendWhole, got.broke, got.brokeLeaf = 0, 0, 0, 0
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.run, got, tc.want)
		}
	}
}
