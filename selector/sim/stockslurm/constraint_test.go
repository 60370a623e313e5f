package stockslurm

import (
	"strings"
	"testing"
)

func TestParseConstraint(t *testing.T) {
	tests := []struct {
		in, err string
		alts    int
	}{
		{in: ""},
		{in: "bigmem"},
		{in: "a&b|c"},
		{in: "(a|b)&[x|y|z]", alts: 3},
		{in: "[only]", alts: 1},
		{in: "a&", err: "want a feature name"},
		{in: "(a|b", err: "missing )"},
		{in: "[a|b", err: "want | or ]"},
		{in: "[a]&[b]", err: "second matching-OR group"},
		{in: "a*2", err: "node counts"},
		{in: "[" + strings.Repeat("f|", 64) + "g]", err: "65 alternatives"},
	}
	for _, tc := range tests {
		c, err := parseConstraint(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one with %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && len(c.alts) != tc.alts:
			t.Errorf("%q: %d alternatives, want %d", tc.in, len(c.alts), tc.alts)
		}
	}
}

// Left to right, no precedence: a|b&c is (a|b)&c.
func TestConstraintEvaluatesLeftToRight(t *testing.T) {
	c, err := parseConstraint("a|b&c")
	if err != nil {
		t.Fatal(err)
	}
	if c.match(map[string]bool{"a": true}, 0) {
		t.Error("a alone matched a|b&c, which Slurm reads as (a|b)&c")
	}
	if !c.match(map[string]bool{"b": true, "c": true}, 0) {
		t.Error("b&c did not match a|b&c")
	}
}

// tree8's nodes with their leaf as a feature, and "big" on node5-8.
func leafFeatures() Options {
	f := [][]string{}
	for i := 0; i < 8; i++ {
		fs := []string{[]string{"leaf01", "leaf02", "leaf03", "leaf04"}[i/2]}
		if i >= 4 {
			fs = append(fs, "big")
		}
		f = append(f, fs)
	}
	return Options{Tree: true, NodeFeatures: f}
}

func TestPlaceConstraint(t *testing.T) {
	full := []int{0, 1, 2, 3}
	runPlaceCases(t, tree8(), leafFeatures(), []placeCase{{
		// Without a constraint Slurm would take leaf01 (first, equal).
		name: "the first alternative that can start the job wins",
		job:  withConstraint(perNode(2, 4), "[leaf03|leaf01]"),
		want: placement{"node5": full, "node6": full},
	}, {
		// leaf03 has one node busy: the next alternative takes the job.
		name: "a busy alternative falls through to the next",
		load: []busy{{"node5", []int{0}, 0}},
		job:  withConstraint(perNode(2, 4), "[leaf03|leaf01]"),
		want: placement{"node1": full, "node2": full},
	}, {
		name: "every alternative busy: pending",
		load: []busy{{"node5", []int{0}, 0}, {"node1", []int{0}, 0}},
		job:  withConstraint(perNode(2, 4), "[leaf03|leaf01]"),
		want: nil,
	}, {
		// big holds on node5-8; of the alternatives only leaf04 has it.
		name: "a constraint ANDed with the group",
		job:  withConstraint(perNode(2, 4), "(big)&[leaf01|leaf04]"),
		want: placement{"node7": full, "node8": full},
	}, {
		name: "plain OR lets nodes differ",
		load: []busy{{"node1", full, 0}, {"node2", full, 0}, {"node3", full, 0}},
		job:  withConstraint(perJob(8), "leaf02|leaf03"),
		want: placement{"node4": full, "node5": full},
	}, {
		name: "excluded nodes stay out",
		job:  Job{GPUsPerJob: 1, CPUsPerGPU: 1, CPUMilli: 1000, Excluded: []string{"node1", "node2", "node3"}},
		want: placement{"node4": {0}},
	}})
}

func withConstraint(j Job, c string) Job {
	j.Constraint = c
	return j
}
