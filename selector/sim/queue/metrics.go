package queue

import (
	"math"
	"slices"
)

// Class is a gang size class: jobs of Lo..Hi GPUs.
type Class struct {
	Name   string
	Lo, Hi int
}

// Classes are the size classes the metrics are broken down by. Philly's
// sizes fall in them as 1; 2, 4, 8; 12, 16, 24, 32; 64, 128.
var Classes = []Class{
	{"1", 1, 1},
	{"2-8", 2, 8},
	{"9-32", 9, 32},
	{"33+", 33, math.MaxInt},
}

// BigGang is the size from which a job counts in Summary.Wait16 (the
// "16+ GPU gangs" of the targets).
const BigGang = 16

// DefragGang is the size from which a job counts in Summary.Wait32 (the
// "32+ GPU gangs" defragmentation is measured on).
const DefragGang = 32

// ClassStats are the metrics of one size class.
type ClassStats struct {
	Jobs     int     // jobs run (rejected ones excluded)
	MeanWait float64 // seconds
	P95Wait  float64 // seconds, nearest rank
	MeanJCT  float64 // completion time: end - submit, seconds
}

// Summary condenses a Result into the figures the replay reports.
type Summary struct {
	Policy   string
	Jobs     int // jobs run
	Rejected int // jobs that never fit
	// Cancelled counts the jobs cancelled while they waited (Job.Cancel).
	Cancelled int
	// Util is the mean fraction of the cluster's GPUs allocated to running
	// jobs over the submission window (first to last submit); Useful is
	// the same with each job's share divided by its slowdown, the work
	// the cluster would have needed at slowdown 1.
	Util, Useful float64
	Classes      []ClassStats // as Classes
	// Wait16 is the mean wait of jobs of BigGang or more GPUs.
	Wait16   float64
	MeanJCT  float64
	MeanWait float64
	// Tight is the fraction of multi-GPU jobs placed within the tightest
	// domain that could have held them when they started (Tier <=
	// Feasible), of Gangs such jobs.
	Tight float64
	Gangs int
	// SlowdownGPUHours is sum over jobs of GPUs * duration * (slowdown-1).
	SlowdownGPUHours float64
	// StrandedGPUHours integrates, over the submission window, the idle
	// GPUs the waiting jobs could have filled by count (stranded.go).
	StrandedGPUHours float64
	// MeanSlowdown is the GPU-time weighted mean slowdown.
	MeanSlowdown float64
	Backfilled   float64 // fraction of jobs started by backfill
	// HeldIdleGPUHours, PeakHeldIdle, Deadlocks, Timeouts: naive-pods.
	HeldIdleGPUHours float64
	PeakHeldIdle     int
	Deadlocks        int
	Timeouts         int
	// Rebinds, SelfWaitHours, SelfWaitsOverCycle: a deciding policy's
	// controller (Result).
	Rebinds            int
	SelfWaitHours      float64
	SelfWaitsOverCycle int
	// Wait32 and P95Wait32 are the mean and p95 wait of jobs of DefragGang
	// or more GPUs.
	Wait32, P95Wait32 float64
	// Defragmentation: plans carried out, jobs requeued (RequeuesPerJob:
	// per job run), and the GPU-hours of run time they lost (LostShare:
	// as a fraction of the GPU-hours allocated over the replay).
	DefragPlans    int
	Requeues       int
	RequeuesPerJob float64
	LostGPUHours   float64
	LostShare      float64
	// Quotas (Config.Quota): jobs that asked within their account's share
	// (Outcome.Owner), their wait (mean, p95 nearest rank, max), how many
	// waited longer than the quota's bound (Result.OwnerBound: one
	// controller cycle plus the requeue time; violations of the share),
	// and the owners' jobs started by a reclaim.
	OwnerJobs                             int
	OwnerWait, P95OwnerWait, MaxOwnerWait float64
	OwnerViolations                       int
	QuotaReclaims                         int
}

// Summarize computes a result's summary.
func Summarize(r *Result) Summary {
	s := Summary{Policy: r.Policy, HeldIdleGPUHours: r.HeldIdleGPUSeconds / 3600, PeakHeldIdle: r.PeakHeldIdle,
		Deadlocks: r.Deadlocks, Timeouts: r.Timeouts,
		Rebinds: r.Rebinds, SelfWaitHours: r.SelfWaitSeconds / 3600, SelfWaitsOverCycle: r.SelfWaitsOverCycle}
	var acc summaryAcc
	acc.init(r)
	for i := range r.Jobs {
		if r.Outcomes[i].Rejected {
			s.Rejected++
			continue
		}
		if r.Outcomes[i].Cancelled {
			s.Cancelled++
			continue
		}
		s.Jobs++
		acc.add(&s, &r.Jobs[i], &r.Outcomes[i])
	}
	acc.lost(&s, r)
	acc.finish(&s, r.GPUs)
	s.StrandedGPUHours = strandedGPUHours(r, acc.lo, acc.hi)
	s.ownerWaits(r)
	return s
}

// ownerWaits fills the quota figures.
func (s *Summary) ownerWaits(r *Result) {
	s.QuotaReclaims = r.QuotaReclaims
	var waits []float64
	for i := range r.Jobs {
		o := &r.Outcomes[i]
		if !o.Owner || o.Rejected || o.Cancelled {
			continue
		}
		w := o.Wait(&r.Jobs[i])
		waits = append(waits, w)
		s.MaxOwnerWait = max(s.MaxOwnerWait, w)
		if w > r.OwnerBound+ownerSlack {
			s.OwnerViolations++
		}
	}
	if s.OwnerJobs = len(waits); s.OwnerJobs > 0 {
		s.OwnerWait, s.P95OwnerWait = mean(waits), p95(waits)
	}
}

// ownerSlack absorbs float rounding in replay seconds.
const ownerSlack = 1e-6

// lost adds the run time requeues threw away: GPU-hours lost, and the
// GPUs they kept busy (utilisation counts them; useful work does not).
func (a *summaryAcc) lost(s *Summary, r *Result) {
	s.DefragPlans, s.Requeues = r.DefragPlans, len(r.Requeues)
	for _, q := range r.Requeues {
		s.LostGPUHours += float64(q.GPUs) * (q.At - q.Start) / 3600
		a.busy += max(0, min(q.At, a.hi)-max(q.Start, a.lo)) * float64(q.GPUs)
		a.alloc += (q.At - q.Start) * float64(q.GPUs)
	}
}

// summaryAcc gathers what Summarize needs over the jobs that ran.
type summaryAcc struct {
	lo, hi                     float64 // the submission window
	waits                      [][]float64
	jct                        []float64
	w16                        []float64
	busy, useful, work, slowed float64
	alloc                      float64 // GPU-seconds allocated, whole replay
	w32                        []float64
	backfilled                 int
}

func (a *summaryAcc) init(r *Result) {
	a.lo, a.hi = math.Inf(1), math.Inf(-1)
	for i := range r.Jobs {
		a.lo, a.hi = min(a.lo, r.Jobs[i].Submit), max(a.hi, r.Jobs[i].Submit)
	}
	a.waits = make([][]float64, len(Classes))
	a.jct = make([]float64, len(Classes))
}

func (a *summaryAcc) add(s *Summary, j *Job, o *Outcome) {
	k := classOf(j.GPUs)
	a.waits[k] = append(a.waits[k], o.Wait(j))
	a.jct[k] += o.End - j.Submit
	if j.GPUs >= BigGang {
		a.w16 = append(a.w16, o.Wait(j))
	}
	if j.GPUs >= DefragGang {
		a.w32 = append(a.w32, o.Wait(j))
	}
	a.alloc += (o.End - o.Start) * float64(j.GPUs)
	overlap := max(0, min(o.End, a.hi)-max(o.Start, a.lo)) * float64(j.GPUs)
	a.busy += overlap
	a.useful += overlap / o.Slowdown
	gt := j.Duration * float64(j.GPUs)
	a.work += gt
	a.slowed += gt * o.Slowdown
	s.SlowdownGPUHours += gt * (o.Slowdown - 1) / 3600
	if j.GPUs >= 2 {
		s.Gangs++
		if o.Tier <= o.Feasible {
			s.Tight++
		}
	}
	if o.Backfilled {
		a.backfilled++
	}
}

func (a *summaryAcc) finish(s *Summary, gpus int) {
	if span := (a.hi - a.lo) * float64(gpus); span > 0 {
		s.Util, s.Useful = a.busy/span, a.useful/span
	}
	s.Classes = make([]ClassStats, len(Classes))
	var allWait, allJCT float64
	for k := range Classes {
		cs := &s.Classes[k]
		cs.Jobs = len(a.waits[k])
		cs.MeanWait, cs.P95Wait = mean(a.waits[k]), p95(a.waits[k])
		cs.MeanJCT = math.NaN() // no job of the class: no figure, not 0
		if cs.Jobs > 0 {
			cs.MeanJCT = a.jct[k] / float64(cs.Jobs)
			allWait += cs.MeanWait * float64(cs.Jobs)
		}
		allJCT += a.jct[k]
	}
	s.MeanWait, s.MeanJCT = math.NaN(), math.NaN()
	if s.Jobs > 0 {
		s.MeanWait, s.MeanJCT = allWait/float64(s.Jobs), allJCT/float64(s.Jobs)
		s.Backfilled = float64(a.backfilled) / float64(s.Jobs)
	}
	s.Wait16 = mean(a.w16)
	s.Wait32, s.P95Wait32 = mean(a.w32), p95(a.w32)
	if s.Jobs > 0 {
		s.RequeuesPerJob = float64(s.Requeues) / float64(s.Jobs)
	}
	if a.alloc > 0 {
		s.LostShare = s.LostGPUHours * 3600 / a.alloc
	}
	if s.Gangs > 0 {
		s.Tight /= float64(s.Gangs)
	}
	if a.work > 0 {
		s.MeanSlowdown = a.slowed / a.work
	}
}

func classOf(gpus int) int {
	for k, c := range Classes {
		if gpus >= c.Lo && gpus <= c.Hi {
			return k
		}
	}
	return 0
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// p95 is the nearest-rank 95th percentile (sorts v).
func p95(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	return v[int(math.Ceil(0.95*float64(len(v))))-1]
}
