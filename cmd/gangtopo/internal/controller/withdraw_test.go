package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Withdraw (a controller stopping for good) puts every pin back through
// the door, as switching actions off does, and reads Slurm again to say
// what is left: nothing once the pin is gone; the pin when Slurm refuses
// the update. A controller that does not lead leaves it to the leader.
func TestWithdraw(t *testing.T) {
	undo := []string{"scontrol update JobId=52 AdminComment= ReqNodeList= QOS=gt-teama"}
	for _, tt := range []struct {
		name    string
		leader  string
		refused bool
		want    []string
		left    []string
	}{
		{"the pin goes", ctld.LeaderAlways, false, undo, nil},
		{"slurm refuses", ctld.LeaderAlways, true, undo, []string{"the quota pin of job 52 (nodes node[13-14])"}},
		{"not the leader", ctld.LeaderNever, false, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := pinOf52
			m.Until = time.Now().Add(time.Hour)
			l := newDutyLab(t, func(c *ctld.Config) { c.Quota.Enabled = true; c.Actions.Leader = tt.leader }, &m, "0", "gangtopo")
			// Slurm as it is once the update went through: the job
			// unpinned, unmarked
			clean := filepath.Join(filepath.Dir(l.squeue), "unpinned.json")
			pinned := l.squeue
			l.squeue = clean
			l.writeSqueue(nil)
			l.squeue = pinned
			script := "echo \"scontrol $*\" >> " + l.log + "; cp " + clean + " " + pinned
			if tt.refused {
				script = "echo \"scontrol $*\" >> " + l.log + "; echo 'slurm_update error: Access/permission denied' >&2; exit 1"
			}
			l.slurm("scontrol", script)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			left := l.c.Withdraw(ctx, "gangtopo was removed")
			if diff := cmp.Diff(tt.left, left); diff != "" {
				t.Errorf("left (-want +got):\n%s\nlogs:\n%s", diff, l.logs.String())
			}
			if diff := cmp.Diff(tt.want, commands(t, l.log)); diff != "" {
				t.Errorf("commands (-want +got):\n%s\nlogs:\n%s", diff, l.logs.String())
			}
			if tt.want != nil && !strings.Contains(l.logs.String(), `"action":"unpin"`) {
				t.Errorf("the undo is not logged:\n%s", l.logs.String())
			}
		})
	}
}

// A controller with no duty holds nothing, and reads nothing to say so.
func TestWithdrawWithoutDuties(t *testing.T) {
	l := newLab(t)
	l.slurm("squeue", "echo squeue must not run >&2; exit 1")
	if left := l.c.Withdraw(context.Background(), "gone"); left != nil {
		t.Errorf("left %v", left)
	}
}
