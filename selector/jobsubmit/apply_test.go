package jobsubmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Apply writes a rewrite into the job as the C shim writes it into
// job_desc: every field the rewrite sets replaces the job's.
func TestApply(t *testing.T) {
	feat, exc, empty := "[gt_node02|gt_node05]", "node[05-16]", ""
	j := Job{Name: "j", TresPerJob: "gres:gpu:32", Features: "ib"}
	got := Result{Action: Modify, Features: &feat, ExcNodes: &exc, TresPerJob: &empty, MinNodes: 4, MaxNodes: 4}.Apply(j)
	want := Job{Name: "j", Features: feat, ExcNodes: exc, MinNodes: 4, MaxNodes: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := (Result{Action: Keep, Features: &feat}).Apply(j); !cmp.Equal(j, got) {
		t.Errorf("Keep changed the job: %+v", got)
	}
}
