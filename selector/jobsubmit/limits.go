package jobsubmit

import (
	"fmt"
	"unicode/utf8"
)

// Slurm's byte limits on what the rewrite writes.
//
// slurmctld measures a job's strings after job_submit has run
// (validate_job_create_req, then _test_job_desc_fields in job_mgr.c) and
// after job_modify (_update_job, the same check), and refuses a job or an
// update with any of them too long (ESLURM_PATHNAME_TOO_LONG, "strlen(...)
// too big"). For the fields gangtopo writes the caps are the same in
// 22.05.8, 24.11.5 and 26.05.x: comment and features 1024 bytes each.
// AdminComment, req_nodes and exc_nodes are not measured.
//
// A rewrite that broke them would make Slurm refuse a job gangtopo meant
// to place (a 1024-GPU spine gang's decision line names its 128 nodes,
// 1,574 bytes, in Comment; a long --constraint leaves no room for the
// matching OR). So every rewrite is fitted (fit) before it leaves:
//
//  1. the features: alternatives are dropped from the end of the matching
//     OR (the ranked tail) until "(user's)&[...]" fits MaxFeaturesBytes; if
//     not even one fits, there is no binding;
//  2. the decision line: it must fit the field's room (Comment: what the
//     user left of its 1024 bytes, after " | "; AdminComment: a line of
//     MaxDecisionBytes). The key=value head is what the controller,
//     `gangtopo unbind` and `gangtopo why` read (bound=, excluded=,
//     hold=), the text after ": " is for people: the text is shortened
//     first (ending in "..."), then alternatives dropped as in 1, then the
//     added exclusions given up (the job may then break a whole node; it
//     is still placed);
//  3. what still does not fit is no binding: the job passes as submitted
//     with an "untouched cause=slurm_limit" line where that fits, and a
//     log line either way.

// Slurm's caps (job_mgr.c _test_job_desc_fields, every supported series).
const (
	MaxFeaturesBytes = 1024
	MaxCommentBytes  = 1024
	// MaxDecisionBytes bounds the decision line in AdminComment, which
	// Slurm does not measure: the line stays within Comment's cap
	// wherever it goes, so it reads the same in either field.
	MaxDecisionBytes = 1024
)

// CauseSlurmLimit: the binding or the decision line would not fit Slurm's
// byte limits, so the job is left as submitted.
const CauseSlurmLimit Cause = "slurm_limit"

// lineRoom is how many bytes the decision line may take in the field it
// goes to: Comment shares its cap with what the user wrote there (joined
// by " | "); negative when the user's own comment leaves none.
func (dc *Decider) lineRoom(j Job) int {
	if dc.policy.DecisionField != FieldComment {
		return MaxDecisionBytes
	}
	if j.Comment == "" {
		return MaxCommentBytes
	}
	return MaxCommentBytes - len(j.Comment) - len(" | ")
}

// fit is stage 5's last step: rewrite out of job j, deciding d, within
// Slurm's limits (see above). It returns the fitted rewrite and decision,
// what it gave up (for the log), and false when not even that fits.
func (dc *Decider) fit(j Job, out Result, d Decision) (Result, Decision, string, bool) {
	room := dc.lineRoom(j)
	full, text, bound := len(d.String()), d.Text, len(d.Bound)
	d.Text = ""
	for len(d.Bound) > 1 && (dc.featuresOver(j, out, d.Bound) || len(d.String()) > room) {
		d.Bound = d.Bound[:len(d.Bound)-1]
	}
	if dc.featuresOver(j, out, d.Bound) {
		return out, d, fmt.Sprintf("the job's features leave no room for gangtopo's binding within Slurm's %d bytes", MaxFeaturesBytes), false
	}
	var gave []string
	if len(d.String()) > room && d.Excluded != "" {
		d.Excluded, out.ExcNodes = "", nil
		gave = append(gave, "the whole-node exclusions")
	}
	if len(d.String()) > room {
		return out, d, fmt.Sprintf("its decision line would not fit the %d bytes %s leaves", max(room, 0), dc.fieldName()), false
	}
	if len(d.Bound) < bound {
		out.Features = strptr(andFeatures(j.Features, dc.featureExpr(d.Bound)))
		gave = append(gave, fmt.Sprintf("%d of %d alternatives", bound-len(d.Bound), bound))
	}
	d.Text = shorten(text, room-len(d.String())-len(": "))
	note := ""
	if len(gave) > 0 || d.Text != text {
		note = fmt.Sprintf("fitted to Slurm's byte limits: a %d-byte line where %s has %d", full, dc.fieldName(), room)
		for _, g := range gave {
			note += "; gave up " + g
		}
	}
	return out, d, note, true
}

// featuresOver says whether the job's features with gangtopo's binding to
// bound (when the rewrite binds through features) exceed Slurm's cap.
func (dc *Decider) featuresOver(j Job, out Result, bound []string) bool {
	return out.Features != nil && len(bound) > 0 && len(andFeatures(j.Features, dc.featureExpr(bound))) > MaxFeaturesBytes
}

func (dc *Decider) fieldName() string {
	if dc.policy.DecisionField == FieldComment {
		return "Comment"
	}
	return "AdminComment"
}

// shorten cuts text to at most n bytes, ending in "..." when cut (at a
// character boundary); "" when not even that fits.
func shorten(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const dots = "..."
	if n < len(dots)+1 {
		return ""
	}
	cut := n - len(dots)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + dots
}
