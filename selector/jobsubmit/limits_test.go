package jobsubmit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// fitted is what the limit tests compare of a rewrite.
type fitted struct {
	Verdict  Verdict
	Cause    Cause
	Features string // "<unset>" when the rewrite leaves them
	Bound    string
	Excluded string
	Line     int  // bytes of the decision line written, 0: none
	Cut      bool // the text ends in "..."
}

func fittedOf(t *testing.T, dc *Decider, j Job, r Result) fitted {
	t.Helper()
	f := fitted{Verdict: r.Decision.Verdict, Cause: r.Decision.Cause, Features: "<unset>",
		Bound: strings.Join(r.Decision.Bound, ","), Excluded: r.Decision.Excluded}
	if r.Features != nil {
		f.Features = *r.Features
		if len(f.Features) > MaxFeaturesBytes {
			t.Errorf("Features of %d bytes, over Slurm's %d", len(f.Features), MaxFeaturesBytes)
		}
	}
	field, before := r.AdminComment, j.AdminComment
	if dc.policy.DecisionField == FieldComment {
		field, before = r.Comment, j.Comment
	}
	if field == nil {
		return f
	}
	if dc.policy.DecisionField == FieldComment && len(*field) > MaxCommentBytes {
		t.Errorf("Comment of %d bytes, over Slurm's %d", len(*field), MaxCommentBytes)
	}
	line := strings.TrimPrefix(strings.TrimPrefix(*field, before), " | ")
	f.Line, f.Cut = len(line), strings.HasSuffix(line, "...")
	back, err := ParseDecision(line)
	if err != nil {
		t.Fatalf("the line written does not parse: %v\n%s", err, line)
	}
	if strings.Join(back.Bound, ",") != f.Bound || back.Excluded != f.Excluded || back.Hold != r.Decision.Hold {
		t.Errorf("the line reads back bound=%v excluded=%q hold=%q; the decision has %q, %q, %q", back.Bound, back.Excluded, back.Hold, f.Bound, f.Excluded, r.Decision.Hold)
	}
	return f
}

// TestFitsSlurmLimits: every rewrite stays within what slurmctld accepts
// after job_submit (Comment and Features at most 1024 bytes), at the
// boundaries.
func TestFitsSlurmLimits(t *testing.T) {
	leaves := "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]"
	tests := []struct {
		name  string
		field string
		busy  map[string]int
		job   Job
		want  fitted
	}{
		{
			// the head ("gangtopo v1 placed ... bound=leaf1,leaf2,leaf3,leaf4
			// snapshot=7") is 122 bytes, ": " 2, the engine's text 67
			name:  "a leaf gang, room to spare",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf"},
			want:  fitted{Verdict: VerdictPlaced, Features: leaves, Bound: "leaf1,leaf2,leaf3,leaf4", Line: 191},
		},
		{
			// 1024 - 830 - 3 (" | ") = 191 bytes of room: the whole line
			name:  "Comment with exactly the room the line takes",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Comment: strings.Repeat("c", 830)},
			want:  fitted{Verdict: VerdictPlaced, Features: leaves, Bound: "leaf1,leaf2,leaf3,leaf4", Line: 191},
		},
		{
			// 1024 - 831 - 3 = 190: one byte short; the text is cut (to 66
			// bytes, "..." included), the head kept whole
			name:  "Comment one byte short: the text is cut",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Comment: strings.Repeat("c", 831)},
			want:  fitted{Verdict: VerdictPlaced, Features: leaves, Bound: "leaf1,leaf2,leaf3,leaf4", Line: 190, Cut: true},
		},
		{
			// 1024 - 899 - 3 = 122: the head fits, no text
			name:  "room for the head alone",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Comment: strings.Repeat("c", 899)},
			want:  fitted{Verdict: VerdictPlaced, Features: leaves, Bound: "leaf1,leaf2,leaf3,leaf4", Line: 122},
		},
		{
			// 1024 - 905 - 3 = 116: 122 - 6 (",leaf4") with three
			// alternatives, the features following
			name:  "room for three alternatives",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Comment: strings.Repeat("c", 905)},
			want:  fitted{Verdict: VerdictPlaced, Features: "[gt_leaf1|gt_leaf2|gt_leaf3]", Bound: "leaf1,leaf2,leaf3", Line: 116},
		},
		{
			// 1024 - 980 - 3 = 41: no head fits (104 with one alternative),
			// nor the untouched line's (69): nothing is written
			name:  "no room for any line: the job as submitted",
			field: FieldComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Comment: strings.Repeat("c", 980)},
			want:  fitted{Verdict: VerdictUntouched, Cause: CauseSlurmLimit, Features: "<unset>"},
		},
		{
			// (994 bytes)&[3 leaves] = 1 + 994 + 2 + 28 = 1025: two fit;
			// the line is 191 - 12 (",leaf3,leaf4")
			name:  "a long constraint leaves room for two alternatives",
			field: FieldAdminComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Features: strings.Repeat("f", 994)},
			want: fitted{Verdict: VerdictPlaced, Features: "(" + strings.Repeat("f", 994) + ")&[gt_leaf1|gt_leaf2]",
				Bound: "leaf1,leaf2", Line: 179},
		},
		{
			// 1 + 1013 + 2 + len("gt_leaf1") = 1024: exactly Slurm's cap
			name:  "a constraint that leaves room for one alternative exactly",
			field: FieldAdminComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Features: strings.Repeat("f", 1013)},
			want: fitted{Verdict: VerdictPlaced, Features: "(" + strings.Repeat("f", 1013) + ")&gt_leaf1",
				Bound: "leaf1", Line: 173},
		},
		{
			// one byte more: no binding fits; the job passes as submitted,
			// its untouched line saying why
			name:  "a constraint that leaves no room",
			field: FieldAdminComment,
			job:   Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Features: strings.Repeat("f", 1014)},
			want:  fitted{Verdict: VerdictUntouched, Cause: CauseSlurmLimit, Features: "<unset>", Line: 187},
		},
		{
			// node02's 2-GPU hole: the 1-GPU job excludes the 13 whole
			// nodes; its head is 113 bytes with excluded=node[03,05-16],
			// 89 without. 1024 - 921 - 3 = 100: the exclusions are given
			// up, the job still placed in the hole, the text cut to 9 bytes
			name:  "exclusions given up before the job",
			field: FieldComment,
			busy:  with(full("node01", "node04"), "node02", 6),
			job:   Job{TresPerJob: "gres:gpu:1", Comment: strings.Repeat("c", 921)},
			want:  fitted{Verdict: VerdictPlaced, Features: "<unset>", Line: 100, Cut: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			busy := tc.busy
			if busy == nil {
				busy = map[string]int{}
			}
			dc, s := decideFixture(t, func(p *Policy) { p.DecisionField = tc.field; p.BindNodes = 0 }, busy)
			r := decide(t, dc, s, tc.job)
			if diff := cmp.Diff(tc.want, fittedOf(t, dc, tc.job, r)); diff != "" {
				t.Errorf("(-want +got):\n%s\nlog: %s", diff, r.Log)
			}
		})
	}
}

// TestSpineGangLineFitsComment: a 1024-GPU spine gang on 128 8-GPU nodes
// is placed as 128x8, and its decision text names every node (a 1,683-byte
// line on this cluster; the issue measured 1,574 on its own). In Comment
// it is cut to Slurm's 1024 bytes, the head whole: the bound spines are
// what the controller and `gangtopo unbind` read.
func TestSpineGangLineFitsComment(t *testing.T) {
	c := topotest.FatTree(2, 8, 16, topotest.DGXH100)
	p := DefaultPolicy()
	p.Jobs, p.DecisionField = ScopeGPU, FieldComment
	dc, err := New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	j := Job{TresPerJob: "gres:gpu:1024", GangTopology: "spine"}
	r, err := dc.Decide(j, occupancy.New(c), 42, place.New(c, place.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	want := fitted{Verdict: VerdictPlaced, Features: "[gt_spine1|gt_spine2]", Bound: "spine1,spine2", Line: MaxCommentBytes, Cut: true}
	if diff := cmp.Diff(want, fittedOf(t, dc, j, r)); diff != "" {
		t.Errorf("(-want +got):\n%s\nlog: %s", diff, r.Log)
	}
	if !strings.Contains(r.Log, "fitted to Slurm's byte limits: a 1683-byte line where Comment has 1024") {
		t.Errorf("log %q does not say what was fitted", r.Log)
	}
}

// FuzzFitsSlurmLimits: whatever the user's comment and constraint, on any
// occupancy of lab16, the rewrite fits Slurm's caps, its line parses, and
// the features end with exactly the binding the line records (what the
// controller, job_modify and unbind take out again).
func FuzzFitsSlurmLimits(f *testing.F) {
	f.Add(uint16(0), uint16(0), uint8(32), uint16(0), false)
	f.Add(uint16(1000), uint16(0), uint8(16), uint16(0x0f0f), true)
	f.Add(uint16(0), uint16(1013), uint8(8), uint16(0xff00), false)
	f.Fuzz(func(t *testing.T, commentLen, featuresLen uint16, gpus uint8, fullMask uint16, comment bool) {
		busy := map[string]int{}
		for i := 0; i < 16; i++ {
			if fullMask&(1<<i) != 0 {
				busy[nodeName(i)] = 8
			}
		}
		field := FieldAdminComment
		if comment {
			field = FieldComment
		}
		dc, s := decideFixture(t, func(p *Policy) { p.DecisionField = field }, busy)
		j := Job{TresPerJob: fmt.Sprintf("gres:gpu:%d", int(gpus)%64+1), GangTopology: "leaf",
			Comment: strings.Repeat("c", int(commentLen)%1100), Features: strings.Repeat("f", int(featuresLen)%1100)}
		r := decide(t, dc, s, j)
		fittedOf(t, dc, j, r)
		if r.Features != nil && len(r.Decision.Bound) > 0 {
			user, ok := UserFeatures(*r.Features, BindingExpr(dc.policy.FeaturePrefix, r.Decision.Bound))
			if !ok || user != j.Features {
				t.Errorf("features %q do not end with the binding to %v after the user's", *r.Features, r.Decision.Bound)
			}
		}
	})
}

func nodeName(i int) string { return fmt.Sprintf("node%02d", i+1) }

// TestShorten cuts at a character boundary.
func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		text string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdef", 5, "ab..."},
		{"abcdef", 3, ""},
		{"aé€bc", 7, "aé..."}, // "é" is 2 bytes, "€" 3 (bytes 3-5): cutting at 4 would split it
	} {
		if got := shorten(tc.text, tc.n); got != tc.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tc.text, tc.n, got, tc.want)
		}
	}
}
