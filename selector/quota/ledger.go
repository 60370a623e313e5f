package quota

import (
	"maps"
	"math"
	"slices"
	"strings"
)

// Job is one job as the ledger counts it.
type Job struct {
	Account string
	GPUs    int
	// Running: the job holds its GPUs; otherwise it waits (the caller
	// leaves out jobs that may not start whatever the GPUs: held, waiting
	// for another job or a start time).
	Running bool
	// Borrowing: the job is in the borrowing QOS (running: preemptible).
	Borrowing bool
	// NoRequeue: the job may not be requeued (an salloc or srun
	// allocation, --no-requeue). Preempting it under PreemptMode=REQUEUE
	// cancels it, so it never borrows (Admit: CannotBorrow).
	NoRequeue bool
	// OverBorrowBound: a reclaim of it could lose more than a borrowing
	// job may put at risk (OverBorrowBound, the site's
	// quota.borrow_max_gpu_hours), so it never borrows either.
	OverBorrowBound bool
}

// Usage is one account's line of the ledger (the package comment says
// what each figure is).
type Usage struct {
	Account    string
	Guaranteed int
	Cap        int
	InUse      int
	Borrowed   int
	Lent       int
	Waiting    int
	// Frag is the free GPUs stranded on nodes its jobs broke; Charge is
	// Frag x the ledger's weight, what counts against the share.
	Frag, Charge float64
	Lending      bool
	// Preemptible is the GPUs of its running jobs in the borrowing QOS.
	Preemptible int
	lend        bool
	// waiting counts its waiting jobs by GPUs (shared between copies of
	// a ledger: replaced, never changed in place); kept is what it keeps
	// back of its idle share for those that fit it.
	waiting map[int]int
	kept    float64
}

// Charged is what counts against the share: in use plus the charge.
func (u *Usage) Charged() float64 { return float64(u.InUse) + u.Charge }

// Idle is the part of the share it leaves unused (charge included).
func (u *Usage) Idle() float64 { return math.Max(0, float64(u.Guaranteed)-u.Charged()) }

// Ledger is the quota's state at one moment.
type Ledger struct {
	GPUs       int // the cluster's
	FragWeight float64
	Accounts   []Usage // in the table's order
	// Outside is the GPUs held by jobs of accounts in no share; Unassigned
	// the GPUs in no share (the cluster less the shares).
	Outside, Unassigned int
	// Pool is what may be lent now; Borrowed the GPUs held beyond shares.
	Pool, Borrowed int
}

// epsilon absorbs float rounding in the charge comparisons.
const epsilon = 1e-9

// Counts are one account's counts, for FromCounts.
type Counts struct {
	InUse, Waiting, Preemptible int
	// WaitingJobs counts the waiting jobs by the GPUs each asks for.
	WaitingJobs map[int]int
	Frag        float64
}

// Compute makes the ledger of a cluster of clusterGPUs GPUs from the
// shares, the jobs and each account's stranded GPUs (FragCharge; nil for
// none), charged at weight (0: the charge is shown, not counted).
func Compute(shares Shares, clusterGPUs int, jobs []Job, frag map[string]float64, weight float64) Ledger {
	counts := make([]Counts, len(shares))
	outside := 0
	for _, j := range jobs {
		i := shares.index(j.Account)
		switch {
		case i < 0 && j.Running:
			outside += j.GPUs
		case i < 0:
		case j.Running:
			counts[i].InUse += j.GPUs
			if j.Borrowing {
				counts[i].Preemptible += j.GPUs
			}
		default:
			counts[i].Waiting += j.GPUs
			if counts[i].WaitingJobs == nil {
				counts[i].WaitingJobs = map[int]int{}
			}
			counts[i].WaitingJobs[j.GPUs]++
		}
	}
	for name, f := range frag {
		if i := shares.index(name); i >= 0 {
			counts[i].Frag += f
		}
	}
	return FromCounts(shares, clusterGPUs, counts, outside, weight)
}

// FromCounts makes the ledger from counts already kept per account (in the
// table's order) and the GPUs held outside the shares: what a simulator
// that follows every start and end does instead of listing jobs.
func FromCounts(shares Shares, clusterGPUs int, counts []Counts, outside int, weight float64) Ledger {
	l := Ledger{GPUs: clusterGPUs, FragWeight: weight, Accounts: make([]Usage, len(shares)), Outside: outside,
		Unassigned: max(0, clusterGPUs-shares.Sum())}
	for i, s := range shares {
		c := counts[i]
		l.Accounts[i] = Usage{Account: s.Account, Guaranteed: s.GPUs, Cap: s.Cap, lend: s.Lend, InUse: c.InUse,
			Waiting: c.Waiting, Preemptible: c.Preemptible, Frag: c.Frag, Charge: weight * c.Frag, waiting: c.WaitingJobs}
	}
	l.settle()
	return l
}

// settle recomputes what follows from the accounts' counts: borrowed,
// lending, the pool and the lent GPUs.
func (l *Ledger) settle() {
	l.Borrowed = 0
	pool := 0.0
	for i := range l.Accounts {
		u := &l.Accounts[i]
		u.Borrowed = max(0, u.InUse-u.Guaranteed)
		l.Borrowed += u.Borrowed
		u.kept = keep(u.Idle(), u.waiting)
		u.Lending = u.lend && (u.Waiting == 0 || u.Idle()-u.kept > epsilon)
		if u.Lending {
			pool += u.Idle() - u.kept
		}
	}
	l.Pool = int(math.Floor(pool+epsilon)) + l.free()
	l.attributeLent()
}

// free is the GPUs in no share that no job outside the shares holds.
func (l *Ledger) free() int { return max(0, l.Unassigned-l.Outside) }

// attributeLent spreads the borrowed GPUs over where they sit: the GPUs
// in no share first, then the idle shares of the lending accounts, then
// those of the others (a lender that stopped lending, whose share is still
// held until it is taken back), each stage in proportion to the GPUs each
// account leaves unused.
func (l *Ledger) attributeLent() {
	rest := l.Borrowed - min(l.Borrowed, l.free())
	for i := range l.Accounts {
		l.Accounts[i].Lent = 0
	}
	for _, lending := range []bool{true, false} {
		idle := make([]int, len(l.Accounts))
		for i := range l.Accounts {
			if u := &l.Accounts[i]; u.Lending == lending {
				idle[i] = max(0, u.Guaranteed-u.InUse)
			}
		}
		rest -= l.apportion(rest, idle)
	}
}

// apportion gives up to n GPUs to the accounts in proportion to weights
// (Proportional) and returns how many it gave.
func (l *Ledger) apportion(n int, weights []int) int {
	total := 0
	w := make([]float64, len(weights))
	for i, x := range weights {
		total += x
		w[i] = float64(x)
	}
	n = min(n, total)
	if n <= 0 {
		return 0
	}
	for i, part := range Proportional(n, w) {
		l.Accounts[i].Lent += part
	}
	return n
}

func (l *Ledger) find(account string) *Usage {
	for i := range l.Accounts {
		if strings.EqualFold(l.Accounts[i].Account, account) {
			return &l.Accounts[i]
		}
	}
	return nil
}

// Usage returns an account's line.
func (l *Ledger) Usage(account string) (Usage, bool) {
	if u := l.find(account); u != nil {
		return *u, true
	}
	return Usage{}, false
}

// Entitled says whether a job of gpus GPUs fits its account's share: what
// the account is charged, plus the job, within its guarantee. Such a job
// may take back what others borrowed (Reclaim).
func (l *Ledger) Entitled(account string, gpus int) bool {
	u := l.find(account)
	return u != nil && u.Charged()+float64(gpus) <= float64(u.Guaranteed)+epsilon
}

// MayBorrow says whether a job of gpus GPUs beyond its account's share may
// borrow now: the account's cap allows, and counted as started, what the
// accounts hold beyond their shares stays within the pool. The job takes
// what is left of its account's share first (Remainder) and borrows only
// the rest: Borrowed counts what each account holds beyond its share. So
// an account's remainder smaller than its next job is used for that job,
// whether the account lends or not, and whatever it keeps back.
func (l *Ledger) MayBorrow(account string, gpus int) bool {
	u := l.find(account)
	if u == nil || u.Cap > 0 && u.InUse+gpus > u.Cap {
		return false
	}
	if u.Charged()+float64(gpus) <= float64(u.Guaranteed)+epsilon {
		// within the share (callers ask Entitled first): counted on a copy
		after := *l
		after.Accounts = slices.Clone(l.Accounts)
		after.Start(account, gpus, true)
		return after.Borrowed <= after.Pool
	}
	// Beyond the share, as Start would count it without a copy (the
	// replay asks this of every waiting job at every pass): the account's
	// share is then full, so it lends nothing, and it holds gpus more.
	pool := 0.0
	for i := range l.Accounts {
		if v := &l.Accounts[i]; v != u && v.Lending {
			pool += v.Idle() - v.kept
		}
	}
	borrowed := l.Borrowed - u.Borrowed + max(0, u.InUse+gpus-u.Guaranteed)
	return borrowed <= int(math.Floor(pool+epsilon))+l.free()
}

// Remainder is what is left of an account's share in whole GPUs
// (guaranteed less charged, not below 0): the part of a job beyond the
// share that sits within it.
func (l *Ledger) Remainder(account string) int {
	if u := l.find(account); u != nil {
		return int(math.Floor(u.Idle() + epsilon))
	}
	return 0
}

// Excess is what the account holds beyond its share: the most a reclaim
// may take from it.
func (l *Ledger) Excess(account string) int {
	if u := l.find(account); u != nil {
		return u.Borrowed
	}
	return 0
}

// Admission is how a waiting job would start now.
type Admission int

const (
	// Waits: neither within its share nor may it borrow.
	Waits Admission = iota
	// Within: within its account's share (Entitled).
	Within
	// Borrows: beyond its share, on lent GPUs (MayBorrow): preemptible.
	Borrows
	// CannotBorrow: beyond its share, and it may not be requeued
	// (Job.NoRequeue): preempting it would cancel it; or taking it back
	// could lose more work than the site lets a borrowing job put at risk
	// (Job.OverBorrowBound). It waits for its account's own share,
	// whatever the pool.
	CannotBorrow
)

// Admit says how each waiting job (Account, GPUs; highest priority first)
// would start, counting each as started, one after another, on a copy of
// the ledger: a later job of an account is within its share only if the
// earlier ones leave room. A job that may not be requeued, or over the
// borrow bound, never borrows.
// The ledger itself is not changed.
func (l Ledger) Admit(jobs []Job) []Admission {
	out, _ := l.AdmitOwn(jobs)
	return out
}

// AdmitOwn is Admit, and for each job that borrows the part of it within
// its account's share (its Remainder when it starts; 0 for the others).
func (l Ledger) AdmitOwn(jobs []Job) ([]Admission, []int) {
	l.Accounts = slices.Clone(l.Accounts)
	out, own := make([]Admission, len(jobs)), make([]int, len(jobs))
	for i, j := range jobs {
		switch {
		case l.Entitled(j.Account, j.GPUs):
			out[i] = Within
			l.Start(j.Account, j.GPUs, false)
		case (j.NoRequeue || j.OverBorrowBound) && l.find(j.Account) != nil:
			out[i] = CannotBorrow
		case l.MayBorrow(j.Account, j.GPUs):
			out[i], own[i] = Borrows, min(j.GPUs, l.Remainder(j.Account))
			l.Start(j.Account, j.GPUs, true)
		}
	}
	return out, own
}

// Queue counts a job of gpus GPUs of account that starts waiting (a job
// of an account in no share waits outside the ledger: nothing to count).
func (l *Ledger) Queue(account string, gpus int) {
	if u := l.find(account); u != nil {
		u.Waiting += gpus
		u.waiting = recount(u.waiting, gpus, 1)
		l.settle()
	}
}

// Start counts a waiting job of gpus GPUs of account as running
// (borrowing: in the borrowing QOS), for decisions taken one after another
// in one cycle.
func (l *Ledger) Start(account string, gpus int, borrowing bool) {
	if u := l.find(account); u != nil {
		u.Waiting = max(0, u.Waiting-gpus)
		u.waiting = recount(u.waiting, gpus, -1)
	}
	l.add(account, gpus, borrowing)
}

// Cancel counts a waiting job of gpus GPUs of account as gone without
// running (cancelled while it waited).
func (l *Ledger) Cancel(account string, gpus int) {
	if u := l.find(account); u != nil {
		u.Waiting = max(0, u.Waiting-gpus)
		u.waiting = recount(u.waiting, gpus, -1)
		l.settle()
	}
}

// Stop counts a running job of account as gone; requeued: it waits again.
func (l *Ledger) Stop(account string, gpus int, borrowing, requeued bool) {
	if u := l.find(account); u != nil && requeued {
		u.Waiting += gpus
		u.waiting = recount(u.waiting, gpus, 1)
	}
	l.add(account, -gpus, borrowing)
}

// add changes an account's GPUs in use by gpus (negative: fewer).
func (l *Ledger) add(account string, gpus int, borrowing bool) {
	u := l.find(account)
	if u == nil {
		l.Outside = max(0, l.Outside+gpus)
	} else {
		u.InUse = max(0, u.InUse+gpus)
		if borrowing {
			u.Preemptible = max(0, u.Preemptible+gpus)
		}
	}
	l.settle()
}

// keep is what an account keeps back of its idle share for its waiting
// jobs: those that fit it, smallest first (a job larger than what is
// left cannot use the idle share alone: it borrows, from the pool this
// share is part of).
func keep(idle float64, waiting map[int]int) float64 {
	if len(waiting) == 0 || idle <= 0 {
		return 0
	}
	sizes := make([]int, 0, len(waiting))
	for g, n := range waiting {
		if n > 0 && g > 0 {
			sizes = append(sizes, g)
		}
	}
	slices.Sort(sizes)
	kept := 0.0
	for _, g := range sizes {
		room := int(math.Floor(idle - kept + epsilon))
		if g > room {
			break
		}
		kept += float64(g * min(waiting[g], room/g))
	}
	return kept
}

// recount is waiting with one more (by = 1) or one fewer (by = -1) job of
// gpus GPUs, as a new map: ledgers copied for planning share the old one.
func recount(waiting map[int]int, gpus, by int) map[int]int {
	out := maps.Clone(waiting)
	if out == nil {
		out = map[int]int{}
	}
	if out[gpus] += by; out[gpus] <= 0 {
		delete(out, gpus)
	}
	return out
}
