package e2e

import (
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

func init() {
	register("RewriteWithinSlurmLimits", testRewriteWithinSlurmLimits)
}

// testRewriteWithinSlurmLimits: slurmctld refuses a job whose Comment or
// Features is over 1024 bytes after job_submit. A 32-GPU leaf gang whose
// decision line would pass the room the user's comment leaves
// (decision_field: comment), and one whose constraint leaves no room for
// all four leaves, are both accepted, placed in one leaf, with what
// gangtopo wrote cut to fit: the line's text first, the least ranked
// alternatives next.
func testRewriteWithinSlurmLimits(t *testing.T) {
	reset(t)
	// leaf3 and leaf4 have a busy node each: the gang goes to leaf1 or
	// leaf2, both under spine1, the most free first in the binding
	fill(t, whole("node09", "node13"))

	// 999 bytes of the user's (gt_spine1&...): "(C)&[4 leaves]" would be
	// 1 + 999 + 2 + 37 = 1039 bytes; with two, 1021
	constraint := "gt_spine1" + strings.Repeat("&gt_spine1", 99)
	j := running(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf", "--constraint="+constraint)
	checkFitted(t, j.ID, j.Features, j.AdminComment, constraint)
	if leaves := leavesOf(t, j); len(leaves) != 1 || (leaves[0] != "leaf1" && leaves[0] != "leaf2") {
		t.Errorf("gang %s on %v, want one leaf of spine1", j.ID, leaves)
	}

	writeConfig(t, strings.Replace(labConfig, "decision_field: admin_comment", "decision_field: comment", 1))
	defer writeConfig(t, labConfig)
	// the line is about 200 bytes (snapshot= is a 13-digit generation);
	// 1024 - 851 - 3 = 170 are left: the head fits, the text is cut
	comment := strings.Repeat("c", 851)
	c := running(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf", "--comment="+comment)
	line := strings.TrimPrefix(c.Comment, comment+" | ")
	checkFitted(t, c.ID, c.Features, line, "")
	if len(c.Comment) > jobsubmit.MaxCommentBytes || !strings.HasSuffix(line, "...") {
		t.Errorf("job %s: Comment of %d bytes, its line %q; want at most 1024, the text cut", c.ID, len(c.Comment), line)
	}
	if leaves := leavesOf(t, c); len(leaves) != 1 {
		t.Errorf("gang %s on %v, want one leaf", c.ID, leaves)
	}
}

// checkFitted checks a placed gang's Features and decision line: within
// Slurm's 1024 bytes, the features the user's constraint and then exactly
// the binding the line records.
func checkFitted(t *testing.T, id, features, line, user string) {
	t.Helper()
	d, err := jobsubmit.ParseDecision(line)
	if err != nil || d.Verdict != jobsubmit.VerdictPlaced || len(d.Bound) == 0 {
		t.Fatalf("job %s: decision %q (%v), want placed and bound", id, line, err)
	}
	got, ok := jobsubmit.UserFeatures(features, jobsubmit.BindingExpr(jobsubmit.DefaultFeaturePrefix, d.Bound))
	if len(features) > jobsubmit.MaxFeaturesBytes || !ok || got != user {
		t.Errorf("job %s: Features (%d bytes) %q do not end with the binding to %v after the user's", id, len(features), features, d.Bound)
	}
}
