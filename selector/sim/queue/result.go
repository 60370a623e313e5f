package queue

import (
	"math"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Outcome is what happened to one job.
type Outcome struct {
	// Start and End are in replay seconds; NaN for a rejected job. Start
	// is when the job began to run: its whole gang placed (for naive-pods,
	// its last pod bound).
	Start, End float64
	// Rejected: the job can never run on this cluster under this policy
	// (it does not fit even the empty cluster); it is not queued.
	Rejected bool
	// Backfilled: started ahead of an older blocked job.
	Backfilled bool
	// Cancelled: the job's Cancel time came while it waited; it never ran.
	Cancelled bool
	// By names the pass that started the job with Config.Timing: "submit",
	// "main" or "backfill" (as sacct's flags do); "" without.
	By string
	// Tier is the tightest domain tier holding the job's GPUs, Nodes the
	// servers it used and Slowdown the factor its run time was multiplied
	// by.
	Tier     topology.Tier
	Nodes    int
	Slowdown float64
	// Feasible is the tightest tier that could have held the job when it
	// started (see feasibility), computed for jobs of 2 or more GPUs; 0
	// otherwise.
	Feasible topology.Tier
	// Restarts counts naive-pods rendezvous timeouts of this job.
	Restarts int
	// Requeues counts the times a defragmentation plan requeued the job;
	// Ran is the time it ran before those requeues (lost).
	Requeues int
	Ran      float64
	// Failures counts the times a node failure requeued the job (its run
	// time before them is in Ran too).
	Failures int
	// Owner (Config.Quota): the job asked within its account's share
	// (what the account held and waited for, plus the job, fit the
	// share when it was submitted).
	Owner bool
	// Used is where the job's last run held its GPUs (Requeue.Used: the
	// runs before it), nil for a job that never ran: what the cluster's
	// occupancy over time is computed from (timeline.go). Kept with
	// Config.RecordUse only.
	Used []NodeGPUs
}

// NodeGPUs is the GPUs a run held on one node.
type NodeGPUs struct {
	Node topology.NodeID
	GPUs int32
}

// usedBy is what allocation a holds on each node.
func usedBy(a occupancy.Allocation) []NodeGPUs {
	out := make([]NodeGPUs, len(a.Nodes))
	for i, na := range a.Nodes {
		out[i] = NodeGPUs{Node: na.Node, GPUs: int32(len(na.GPUs))}
	}
	return out
}

// Wait is the queueing delay: start minus submit, less the time the job
// ran before it was requeued.
func (o *Outcome) Wait(j *Job) float64 { return o.Start - j.Submit - o.Ran }

// Result is one replay of one policy.
type Result struct {
	Policy   string
	Cluster  string
	GPUs     int // the cluster's GPUs
	Jobs     []Job
	Outcomes []Outcome
	// HeldIdleGPUSeconds integrates the GPUs bound to jobs that are not
	// yet running (naive-pods: partial gangs); PeakHeldIdle is its
	// maximum.
	HeldIdleGPUSeconds float64
	PeakHeldIdle       int
	// Deadlocks counts the times no GPU was free, no job was running and
	// partial gangs held GPUs: nothing could ever move again without a
	// timeout (naive-pods).
	Deadlocks int
	// Timeouts counts rendezvous timeouts (naive-pods).
	Timeouts int
	// Work done, for the record: scheduling passes and Place calls.
	Passes, PlaceCalls int
	// Deciding policies (the deployed path): Rebinds counts the
	// controller's re-decisions of pending jobs; SelfWaitSeconds sums the
	// time jobs waited only because of their binding, from when a pass
	// found it so to the controller cycle that re-bound them;
	// SelfWaitsOverCycle counts those waits longer than one cycle (the
	// invariant: 0).
	Rebinds            int
	SelfWaitSeconds    float64
	SelfWaitsOverCycle int
	// Defragmentation (Config.Defrag): the plans carried out and the jobs
	// they requeued.
	DefragPlans int
	Requeues    []Requeue
	// QuotaReclaims counts the owners' jobs started by taking borrowed
	// GPUs back (Config.Quota, QuotaDynamic); OwnerBound is the quota's
	// allowed owner wait (Quota.OwnerBound; 0 without a quota).
	QuotaReclaims int
	OwnerBound    float64
	// Shares are the quota's (nil without one).
	Shares quota.Shares
	// Restarts are the jobs requeued by node failures (Config.Failures),
	// in failure order; Failures the failures that took a node down
	// before the last job ended.
	Restarts []Restart
	Failures int
}

func newResult(name string, c *topology.Cluster, jobs []Job) *Result {
	r := &Result{Policy: name, Cluster: c.Name, GPUs: c.NumGPUs(), Jobs: jobs, Outcomes: make([]Outcome, len(jobs))}
	for i := range r.Outcomes {
		r.Outcomes[i].Start, r.Outcomes[i].End = math.NaN(), math.NaN()
	}
	return r
}
