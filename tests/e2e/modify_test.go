package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
)

func init() {
	register("UserUpdateKeepsBinding", testUserUpdateKeepsBinding)
}

// nobody is the user the tests submit and update jobs as when root's
// rights would hide the point (slurmctld's job_modify lets root's and
// SlurmUser's updates through untouched).
const nobody = 65534

// testUserUpdateKeepsBinding: a user's `scontrol update JobId=X
// Features=...` would replace gangtopo's matching OR; job_modify puts it
// back after the user's constraint, from the binding the snapshot
// publishes. Clearing the features keeps gangtopo's alone. root's update
// (an administrator, the controller) passes as given.
func testUserUpdateKeepsBinding(t *testing.T) {
	reset(t)
	defer cancelUser(t, nobody)
	fill(t, map[string]int{"node02": 6})
	out, err := lab.RunAs(ctxT(t), nobody, nobody, "sbatch", "--parsable", "-o", "/dev/null", "--hold", "--gpus=2", "--wrap", "sleep 1000")
	must(t, err)
	id := strings.TrimSpace(out)
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	ours := j.Features
	if !strings.HasPrefix(ours, "[gt_node02|") {
		q, _ := lab.Run(ctxT(t), 0, "squeue", "-a", "-t", "all", "-o", "%i %T %N %b %r")
		n, _ := lab.Run(ctxT(t), 0, "scontrol", "show", "node", "node02")
		snap, _ := os.ReadFile(snapshotFile)
		t.Fatalf("job %s bound to %q; want node02 first\nsqueue:\n%s\nnode02:\n%s\nsnapshot:\n%.3000s", id, ours, q, n, snap)
	}
	publish(t) // the controller's part: the snapshot lists the job's binding

	offset := ctldLogSize()
	for _, tc := range []struct{ set, want string }{
		{"gt_spine1", "(gt_spine1)&" + ours},
		{"", ours},
	} {
		if _, err := lab.RunAs(ctxT(t), nobody, nobody, "scontrol", "update", "JobId="+id, "Features="+tc.set); err != nil {
			t.Fatal(err)
		}
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if j.Features != tc.want {
			t.Errorf("after the user's Features=%s: %q, want %q", tc.set, j.Features, tc.want)
		}
	}
	if logged := ctldLogSince(offset); !strings.Contains(logged, "update of job "+id+" by uid 65534 keeps gangtopo's binding") {
		t.Errorf("slurmctld log:\n%s\nwant a line per kept binding", logged)
	}
	if _, err := lab.Run(ctxT(t), 0, "scontrol", "update", "JobId="+id, "Features=gt_spine1"); err != nil {
		t.Fatal(err)
	}
	if j, _ := lab.ShowJob(ctxT(t), id); j.Features != "gt_spine1" {
		t.Errorf("after root's Features=gt_spine1: %q; want it as given", j.Features)
	}
}

// cancelUser cancels a user's jobs (reset cancels root's only).
func cancelUser(t *testing.T, uid int) {
	t.Helper()
	if _, err := lab.Run(context.Background(), 0, "scancel", "--quiet", "-u", itoa(uid)); err != nil {
		t.Error(err)
	}
}
