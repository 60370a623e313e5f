package defrag

import (
	"math"
	"time"
)

// Job is what Slurm says about a running job that the cost model and the
// eligibility rules (Scope, Preemption) read. The caller fills it from
// Slurm (squeue --json) or from a simulator's state; nothing here reads a
// clock.
type Job struct {
	// Requeue: Slurm may requeue the job (its own --requeue, or
	// JobRequeue=1 in slurm.conf and no --no-requeue: Slurm's Requeue=1).
	Requeue bool
	// Partition, QOS and Account are the job's, as Slurm reports them.
	Partition, QOS, Account string
	// Start is when the job (last) started; Checkpoint the last
	// checkpoint it advertises (zero: none). OnSIGTERM: it saves its state
	// when Slurm signals it, so a requeue loses only the restart.
	Start, Checkpoint time.Time
	OnSIGTERM         bool
	// Restarts is Slurm's restart count (requeues so far).
	Restarts int
	// Priority is Slurm's priority of the job.
	Priority uint32
}

// CostModel prices taking a running job: the GPU-hours of work it loses,
// weighted by how often it was already requeued and by its priority.
//
//	lost = GPUs x (now - max(Start, Checkpoint)) + GPUs x RestartOverhead
//	       (a job that saves on SIGTERM loses only the overhead)
//	cost = lost x (1 + RequeueWeight x Restarts)
//	            x (1 + PriorityWeight x min(Priority / reference, 10))
//
// lost is what the lost-work budget counts (Limits); cost is what plans are
// compared and capped by. The reference priority is the waiting gang's: a
// victim ranked as high as the gang costs (1 + PriorityWeight) times its
// loss, one ranked far below costs little more than its loss.
type CostModel struct {
	// RestartOverhead is the time each GPU of a requeued job spends
	// again on starting (loading, warming up) beyond the work lost.
	RestartOverhead time.Duration
	// RequeueWeight makes a job requeued before dearer: it has lost work
	// already.
	RequeueWeight float64
	// PriorityWeight makes a job of high priority dearer.
	PriorityWeight float64
}

// maxPriorityRatio caps a victim's priority relative to the gang's in the
// cost: one job ranked far above the gang is dear, not infinitely so.
const maxPriorityRatio = 10

// Lost is the GPU-hours of work a job of gpus GPUs loses if taken at now.
func (m CostModel) Lost(j Job, gpus int, now time.Time) float64 {
	since := j.Start
	if j.Checkpoint.After(since) {
		since = j.Checkpoint
	}
	ran := now.Sub(since).Hours()
	if j.OnSIGTERM || ran < 0 || since.IsZero() {
		ran = 0
	}
	return float64(gpus) * (ran + m.RestartOverhead.Hours())
}

// Cost is Lost weighted by the job's requeues and its priority relative
// to ref (the waiting gang's; 0 leaves priority out).
func (m CostModel) Cost(j Job, gpus int, now time.Time, ref uint32) float64 {
	c := m.Lost(j, gpus, now) * (1 + m.RequeueWeight*float64(max(j.Restarts, 0)))
	if ref > 0 && m.PriorityWeight > 0 {
		c *= 1 + m.PriorityWeight*math.Min(float64(j.Priority)/float64(ref), maxPriorityRatio)
	}
	return c
}
