package quotaexec

import (
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/quota"
)

// Observed is what the quota counts of one poll: the running jobs of the
// snapshot (account and QOS from Slurm's facts), the waiting ones in
// priority order, each account's stranded GPUs, and the jobs whose GPUs
// could not be read (left out, reported).
type Observed struct {
	Run        []RunJob
	Wait       []WaitJob
	Frag       map[string]float64
	Unreadable []string
	GPUs       int
}

// Observe turns a snapshot and the poll it came from (squeue --json: the
// facts) into what the quota counts. A pending job that is held or waits
// for another job, a start time or a reservation is not waiting demand.
// A waiting job that Slurm may not requeue (requeue false: --no-requeue,
// or JobRequeue=0 without --requeue; batch_flag false: an salloc or srun
// allocation, which Slurm never requeues) is marked NoRequeue: preempting
// it under PreemptMode=REQUEUE would cancel it. Its time limit comes
// along for the borrow bound.
func Observe(s *occupancy.Snapshot, st *slurmstate.State, m *frag.Meter) Observed {
	facts := make(map[string]slurmstate.JobFacts, len(st.Jobs))
	for i := range st.Jobs {
		facts[st.Jobs[i].ID] = st.Jobs[i].Facts
	}
	o := Observed{GPUs: s.Cluster.NumGPUs()}
	for _, j := range s.Jobs {
		f := facts[j.ID]
		o.Run = append(o.Run, RunJob{ID: j.ID, Account: strings.ToLower(f.Account), QOS: f.QOS, GPUs: j.Alloc.NumGPUs()})
	}
	queued := append([]slurmstate.PendingJob(nil), st.Queued...)
	sort.SliceStable(queued, func(a, b int) bool { return queued[a].Priority > queued[b].Priority })
	for _, pj := range queued {
		if !demand(pj.Reason) {
			continue
		}
		g, err := jobsubmit.GPUCount(pj.Job)
		if err != nil {
			o.Unreadable = append(o.Unreadable, pj.Target+": "+err.Error())
			continue
		}
		if g > 0 {
			o.Wait = append(o.Wait, WaitJob{Target: pj.Target, Account: strings.ToLower(pj.Facts.Account), QOS: pj.Facts.QOS, GPUs: g,
				NoRequeue: !pj.Facts.Requeue || !pj.Facts.Batch, TimeLimit: pj.Facts.TimeLimit})
		}
	}
	if m != nil {
		o.Frag = quota.FragCharge(m, s, func(j int) string { return o.Run[j].Account })
	}
	return o
}

// notDemand are Slurm's pending reasons that no free GPU would end.
var notDemand = []string{"JobHeldUser", "JobHeldAdmin", "Dependency", "DependencyNeverSatisfied",
	"BeginTime", "Reservation", "PartitionDown", "PartitionInactive", "InvalidQOS",
	"InvalidAccount"}

func demand(reason string) bool {
	for _, r := range notDemand {
		if strings.EqualFold(reason, r) {
			return false
		}
	}
	return true
}
