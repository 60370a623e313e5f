package jobsubmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecisionRoundTrip(t *testing.T) {
	tests := []struct {
		d    Decision
		text string
	}{
		{Decision{Verdict: VerdictPlaced, Request: "leaf:required", GPUs: 32, Shape: "4x8", Domain: "leaf4", Tier: "leaf",
			Bound: []string{"leaf4", "leaf3"}, Snapshot: 42, Text: "leaf4 has 4 whole free nodes"},
			"gangtopo v1 placed request=leaf:required gpus=32 shape=4x8 domain=leaf4 tier=leaf bound=leaf4,leaf3 snapshot=42: leaf4 has 4 whole free nodes"},
		// slurm_topology: block: slices of 2 trays are Slurm segments
		{Decision{Verdict: VerdictPlaced, Request: "leaf:required,slice=8", GPUs: 32, Shape: "8x4", Segment: 2, Domain: "leaf1", Tier: "leaf",
			Bound: []string{"leaf1"}, Snapshot: 5, Text: "z"},
			"gangtopo v1 placed request=leaf:required,slice=8 gpus=32 shape=8x4 segment=2 domain=leaf1 tier=leaf bound=leaf1 snapshot=5: z"},
		{Decision{Verdict: VerdictUntouched, Text: "snapshot /s.json: no such file or directory"},
			"gangtopo v1 untouched: snapshot /s.json: no such file or directory"},
		{Decision{Verdict: VerdictPlaced, Request: "any:preferred", GPUs: 1, Domain: "node02/nvl0", Tier: "nvlink", Excluded: "node[05-07,09]", Snapshot: 3, Text: "x"},
			"gangtopo v1 placed request=any:preferred gpus=1 domain=node02/nvl0 tier=nvlink excluded=node[05-07,09] snapshot=3: x"},
		// a gang re-bound after a node failure, allowed its leaf's spare
		{Decision{Verdict: VerdictPlaced, Request: "leaf:required", GPUs: 24, Domain: "leaf2", Tier: "leaf", Bound: []string{"leaf2", "leaf3"},
			Excluded: "node[04,12]", Spares: []string{"leaf2"}, Snapshot: 9, Text: "w"},
			"gangtopo v1 placed request=leaf:required gpus=24 domain=leaf2 tier=leaf bound=leaf2,leaf3 excluded=node[04,12] spares=leaf2 snapshot=9: w"},
		// a job that accepts two models: the controller learns them
		{Decision{Verdict: VerdictPlaced, Request: "any:preferred", GPUs: 1, Domain: "node03", Tier: "node", Bound: []string{"node03", "node01"},
			Models: []string{"v100m16", "v100m32"}, Snapshot: 7, Text: "y"},
			"gangtopo v1 placed request=any:preferred gpus=1 domain=node03 tier=node bound=node03,node01 models=v100m16,v100m32 snapshot=7: y"},
		// the plugin's hold on a placed job's GPUs, named for the controller
		// to list while the job is pending
		{Decision{Verdict: VerdictPlaced, Request: "any:preferred", GPUs: 2, Domain: "node02/nvl0", Tier: "nvlink", Bound: []string{"node02"},
			Snapshot: 4, Hold: "0a1b2c3d4e5f", Text: "h"},
			"gangtopo v1 placed request=any:preferred gpus=2 domain=node02/nvl0 tier=nvlink bound=node02 snapshot=4 hold=0a1b2c3d4e5f: h"},
		{Decision{Verdict: VerdictUntouched, Cause: CauseSlurmLimit, Request: "leaf:required", GPUs: 32, Text: "no room"},
			"gangtopo v1 untouched cause=slurm_limit request=leaf:required gpus=32: no room"},
		{Decision{Verdict: VerdictUntouched, Cause: CauseNotCovered, Request: "leaf:required", GPUs: 8, Text: `partition "cpu" is not in the cluster file`},
			`gangtopo v1 untouched cause=not_covered request=leaf:required gpus=8: partition "cpu" is not in the cluster file`},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.text {
			t.Errorf("String:\n got %s\nwant %s", got, tc.text)
		}
		// a job's comment may hold other text before the decision
		back, err := ParseDecision("user text; " + tc.text)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.d, back); diff != "" {
			t.Errorf("ParseDecision (-want +got):\n%s", diff)
		}
	}
}

func TestParseDecisionErrors(t *testing.T) {
	for _, in := range []string{"", "hello", "gangtopo v1 placed gpus=x", "gangtopo v1 placed colour=blue", "gangtopo v1 placed gpus"} {
		if _, err := ParseDecision(in); err == nil {
			t.Errorf("ParseDecision(%q) succeeded", in)
		}
	}
}
