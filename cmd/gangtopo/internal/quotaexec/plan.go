package quotaexec

import (
	"time"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// One cycle's quota plan, from what runs and what waits:
//
//  1. The ledger (quota.Compute): each account's use, borrowing, waiting
//     demand and fragmentation charge; the pool lenders give.
//  2. The limits (Desired): each account's own QOS at its share, the
//     borrow QOS at what runs there plus what may still be lent.
//  3. The moves: waiting jobs, highest priority first, are counted as if
//     they started one after another on a copy of the ledger. A job that
//     fits its account's share belongs in the account's own QOS; one
//     beyond it that may borrow (quota.Ledger.MayBorrow) in the borrow
//     QOS, where it runs preemptible. A job beyond its share that may not
//     borrow now stays where it is (the QOS limits keep it waiting); one
//     that may not be requeued never borrows (preempting it would cancel
//     it), nor one whose GPUs x time limit exceed
//     quota.borrow_max_gpu_hours (a reclaim of it could lose more than
//     the site lets borrowed work put at risk): it goes back to its own
//     QOS if it sits in the borrow QOS, and is counted
//     (Cycle.CannotBorrow). Only
//     jobs in the account's own QOS or the borrow QOS are moved: a job in
//     any other QOS is the site's.

// RunJob is a running job as the quota counts it.
type RunJob struct {
	ID, Account, QOS string
	GPUs             int
}

// WaitJob is a waiting job: Target names it for scontrol update.
type WaitJob struct {
	Target, Account, QOS string
	GPUs                 int
	// NoRequeue: Slurm may not requeue it (Observe).
	NoRequeue bool
	// TimeLimit is its time limit (0: none): with its GPUs, what a
	// reclaim of it could lose (quota.borrow_max_gpu_hours).
	TimeLimit time.Duration
}

// Move puts a waiting job into another QOS.
type Move struct {
	Job      WaitJob
	From, To string
	// Borrowing: the job goes to the borrow QOS (beyond its share).
	Borrowing bool
}

// Cycle is one cycle's plan.
type Cycle struct {
	Ledger quota.Ledger
	Limits Limits
	Moves  []Move
	// Entitled are the waiting jobs within their account's share (in its
	// own QOS once moved), in priority order: those that may take back
	// what others borrowed (the controller's reclaim).
	Entitled []WaitJob
	// CannotBorrow is, by account, the GPUs of its waiting jobs beyond its
	// share that may not be requeued, or are over the borrow bound, so
	// never borrow: they wait for the account's own share
	// (quota.CannotBorrow).
	CannotBorrow map[string]int
}

// Plan makes the cycle's plan on a cluster of clusterGPUs GPUs; wait is in
// priority order; frag is each account's stranded GPUs (quota.FragCharge).
func Plan(cfg ctld.QuotaConfig, clusterGPUs int, run []RunJob, wait []WaitJob, frag map[string]float64) Cycle {
	jobs := make([]quota.Job, 0, len(run)+len(wait))
	reclaimHeld := map[string]int{}
	inBorrow := 0
	for _, j := range run {
		jobs = append(jobs, quota.Job{Account: j.Account, GPUs: j.GPUs, Running: true, Borrowing: j.QOS == cfg.BorrowQOS})
		switch j.QOS {
		case cfg.BorrowQOS:
			inBorrow += j.GPUs
		case cfg.ReclaimQOS:
			reclaimHeld[j.Account] += j.GPUs
		}
	}
	for _, j := range wait {
		jobs = append(jobs, quota.Job{Account: j.Account, GPUs: j.GPUs})
		if j.QOS == cfg.ReclaimQOS {
			reclaimHeld[j.Account] += j.GPUs
		}
	}
	l := quota.Compute(cfg.Shares, clusterGPUs, jobs, frag, cfg.FragWeight)
	c := Cycle{Ledger: l}
	var own int
	c.Moves, c.Entitled, c.CannotBorrow, own = moves(cfg, l, wait)
	c.Limits = Desired(cfg, &l, reclaimHeld, inBorrow, own)
	return c
}

// moves is step 3 of the plan (quota.Ledger.AdmitOwn), over the waiting
// jobs of accounts with a share in their own QOS or the borrow QOS. own is
// the part of the jobs that borrow that sits within their accounts'
// shares (Desired).
func moves(cfg ctld.QuotaConfig, l quota.Ledger, wait []WaitJob) (out []Move, entitled []WaitJob, cannot map[string]int, own int) {
	var ours []WaitJob
	var jobs []quota.Job
	for _, j := range wait {
		if _, ok := cfg.Shares.Find(j.Account); !ok || j.GPUs == 0 {
			continue
		}
		if j.QOS != cfg.QOSOf(j.Account) && j.QOS != cfg.BorrowQOS {
			continue
		}
		ours = append(ours, j)
		jobs = append(jobs, quota.Job{Account: j.Account, GPUs: j.GPUs, NoRequeue: j.NoRequeue,
			OverBorrowBound: quota.OverBorrowBound(cfg.BorrowMaxGPUHours, j.GPUs, j.TimeLimit)})
	}
	cannot = map[string]int{}
	adm, parts := l.AdmitOwn(jobs)
	for i, a := range adm {
		j, to := ours[i], ""
		switch a {
		case quota.Within:
			to = cfg.QOSOf(j.Account)
			entitled = append(entitled, j)
		case quota.Borrows:
			to = cfg.BorrowQOS
			own += parts[i]
		case quota.CannotBorrow:
			to = cfg.QOSOf(j.Account)
			cannot[j.Account] += j.GPUs
		}
		if to != "" && to != j.QOS {
			out = append(out, Move{Job: j, From: j.QOS, To: to, Borrowing: to == cfg.BorrowQOS})
		}
	}
	return out, entitled, cannot, own
}
