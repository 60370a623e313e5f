package quotaexec

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// TestObserveWaiting: only jobs a free GPU could start are waiting demand
// (held, dependent, begin-time and reservation jobs are not, nor those in
// a partition that is down or inactive or with a QOS or account Slurm
// refuses: counting them would stop their account lending for jobs that
// cannot run), in
// priority order; a job Slurm may not requeue (not batch, or requeue
// off) is marked.
func TestObserveWaiting(t *testing.T) {
	pending := func(id, reason string, prio uint32, requeue, batch bool) slurmstate.PendingJob {
		return slurmstate.PendingJob{ID: id, Target: id, Reason: reason, Priority: prio,
			Job:   jobsubmit.Job{TresPerNode: "gres:gpu:8", MinNodes: 1, MaxNodes: 1, NumTasks: 1},
			Facts: slurmstate.JobFacts{Account: "TeamA", QOS: "gt-teama", Requeue: requeue, Batch: batch, Known: true}}
	}
	st := &slurmstate.State{Queued: []slurmstate.PendingJob{
		pending("1", "JobHeldUser", 90, true, true),
		pending("2", "JobHeldAdmin", 90, true, true),
		pending("3", "Dependency", 90, true, true),
		pending("4", "DependencyNeverSatisfied", 90, true, true),
		pending("5", "BeginTime", 90, true, true),
		pending("6", "Reservation", 90, true, true),
		pending("7", "Resources", 10, true, true),
		pending("8", "Priority", 50, true, true),
		pending("9", "QOSGrpGRES", 30, true, false), // an salloc allocation
		pending("10", "None", 20, false, true),      // --no-requeue
		pending("11", "PartitionDown", 90, true, true),
		pending("12", "PartitionInactive", 90, true, true),
		pending("13", "InvalidQOS", 90, true, true),
		pending("14", "InvalidAccount", 90, true, true),
	}}
	o := Observe(occupancy.New(topotest.Lab16()), st, nil)
	want := []WaitJob{
		{Target: "8", Account: "teama", QOS: "gt-teama", GPUs: 8},
		{Target: "9", Account: "teama", QOS: "gt-teama", GPUs: 8, NoRequeue: true},
		{Target: "10", Account: "teama", QOS: "gt-teama", GPUs: 8, NoRequeue: true},
		{Target: "7", Account: "teama", QOS: "gt-teama", GPUs: 8},
	}
	if diff := cmp.Diff(want, o.Wait); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
}
