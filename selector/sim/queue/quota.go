package queue

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// QuotaMode says how the accounts' shares are kept.
type QuotaMode int

const (
	// QuotaOff: no limit; the shares are only measured against (owner
	// waits, violations), the baseline of no quotas.
	QuotaOff QuotaMode = iota
	// QuotaHard: Slurm's hard limits, each account's QOS (or association)
	// at GrpTRES=gres/gpu=<share>: a job starts only while its account
	// holds no more than its share with it, nothing is lent.
	QuotaHard
	// QuotaDynamic: gangtopo's dynamic quotas (docs/quota.md).
	QuotaDynamic
)

// Quota models GPU shares in the replay (Config.Quota): each job's
// Account holds a share of Shares, kept as Mode says.
//
// QuotaDynamic is the controller's quota duty
// (cmd/gangtopo/internal/controller/quota.go) over selector/quota's
// ledger:
//
//   - A waiting job within its account's share (quota.Ledger.Entitled)
//     may start as usual; one beyond it may start borrowing when the pool
//     the lending accounts leave has room (MayBorrow), and then runs
//     preemptible; any other waits, without blocking the jobs behind it
//     (Slurm's scheduler passes over a job its QOS limit holds). The
//     replay decides this at every scheduling pass on the live ledger;
//     the controller moves jobs between QOS once a cycle, so a job may
//     wait up to one cycle more there than here. Under BorrowMaxGPUHours
//     a job whose GPUs x time limit exceeds it never borrows
//     (quota.OverBorrowBound), as the controller never moves it to the
//     borrow QOS.
//   - Every Interval seconds, while some account waits below its share
//     and others borrow, the waiting jobs within their share, oldest
//     first, counted as if they started one after another (the
//     controller's moves), each get a reclaim plan (quota.Reclaim:
//     borrowed jobs only, never an account below its share, the defrag
//     victim choice under Cost; a job that fits the free GPUs although
//     the last pass left it waiting, on borrowed GPUs only, as the
//     controller plans for a job Slurm has passed over; a preferred gang
//     no domain of its tier can be freed for, over the whole cluster):
//     the victims are requeued at once and the owner's job starts on the
//     freed GPUs RequeueDelay seconds later (Slurm's preemption: the
//     signals, KillWait, the epilog and the next scheduling pass), the
//     GPUs idle meanwhile. At most MaxPerCycle plans a cycle. A plan that
//     failed is not made again before the replay's state changes (a job
//     started, ended or was requeued): it would fail again.
//   - A pin the controller releases after quota.pin_timeout never
//     happens here: the owner's job starts where its plan freed GPUs.
//   - A job that starts borrowing is placed by the engine's lending
//     option (place.Engine.PlaceLent: packed into the domains that hold
//     borrowed GPUs already) when the policy offers it (LendPlacer), unless
//     LendAnywhere.
//   - The fragmentation charge (quota.frag_weight) is not modelled: its
//     weight is 0 by default.
type Quota struct {
	Mode         QuotaMode
	Shares       quota.Shares
	Interval     float64 // seconds; default 5, the controller's cycle
	RequeueDelay float64 // seconds; default 30
	MaxPerCycle  int     // default 20, gangtopo.yaml's quota.max_per_cycle
	Cost         defrag.CostModel
	// LendAnywhere places borrowing jobs as any other (before issue 26):
	// the baseline the lending placement is measured against.
	LendAnywhere bool
	// BorrowMaxGPUHours is gangtopo.yaml's quota.borrow_max_gpu_hours: a
	// job whose GPUs x time limit exceeds it never borrows (0: no bound).
	BorrowMaxGPUHours float64
}

// OwnerBound is how long a job within its account's share may wait
// before the share counts as violated: one controller cycle plus the
// requeue time (the target of issue 15).
func (q *Quota) OwnerBound() float64 { return q.Interval + q.RequeueDelay }

func (q Quota) defaults() Quota {
	if q.Interval <= 0 {
		q.Interval = 5
	}
	if q.RequeueDelay < 0 || q.RequeueDelay == 0 && q.Mode == QuotaDynamic {
		q.RequeueDelay = 30
	}
	if q.MaxPerCycle <= 0 {
		q.MaxPerCycle = 20
	}
	return q
}

// quotaSim is the replay's quota state: the live ledger, kept by the
// ledger's own Queue, Start and Stop as jobs are submitted, start, stop
// and are requeued (the counting the controller's ledger does, in one
// place), and the controller's cycle.
type quotaSim struct {
	cfg  Quota
	acct []int // by job: its share's index, -1 for none
	// borrowing marks running jobs started beyond their share; lentOn is,
	// by NodeID, the GPUs they hold (place.Lending).
	borrowing []bool
	lentOn    []int
	ledger    quota.Ledger
	version   uint64           // changes of the ledger so far
	failed    map[int32]uint64 // job -> version at its last failed plan
	eng       *place.Engine
	epoch     time.Time
	next      float64
}

func newQuotaSim(c *topology.Cluster, jobs []Job, cfg *Quota) *quotaSim {
	if cfg == nil {
		return nil
	}
	q := &quotaSim{cfg: cfg.defaults(), acct: make([]int, len(jobs)), borrowing: make([]bool, len(jobs)),
		ledger: quota.Compute(cfg.Shares, c.NumGPUs(), nil, nil, 0), failed: map[int32]uint64{}, next: math.Inf(1),
		eng: place.New(c, place.Options{}), epoch: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), lentOn: make([]int, len(c.Nodes))}
	index := map[string]int{}
	for i, s := range cfg.Shares {
		index[strings.ToLower(s.Account)] = i
	}
	for j := range jobs {
		q.acct[j] = -1
		if i, ok := index[strings.ToLower(jobs[j].Account)]; ok {
			q.acct[j] = i
		}
	}
	return q
}

// live is the ledger of now.
func (q *quotaSim) live() *quota.Ledger { return &q.ledger }

func (q *quotaSim) changed() { q.version++ }

// account is job j's account as the ledger names it ("" for none: the
// ledger counts such a job outside the shares).
func (q *quotaSim) account(g *gangSim, j int32) string {
	if q.acct[j] < 0 {
		return g.jobs[j].Account
	}
	return q.cfg.Shares[q.acct[j]].Account
}

func (q *quotaSim) share(j int32) int {
	if a := q.acct[j]; a >= 0 {
		return q.cfg.Shares[a].GPUs
	}
	return 0
}

// refuses says a job can never start (Slurm leaves it pending for ever;
// the replay counts it as rejected): under hard limits, one larger than
// its account's share; under dynamic quotas, one larger than its share
// and than all the lending shares, its own and the GPUs in no share (a job
// beyond its share takes its account's remainder and borrows the rest:
// quota.Ledger.MayBorrow).
func (q *quotaSim) refuses(g *gangSim, j int32) bool {
	if q == nil || q.acct[j] < 0 || g.jobs[j].GPUs <= q.share(j) {
		return false
	}
	switch q.cfg.Mode {
	case QuotaHard:
		return true
	case QuotaDynamic:
		lendable := max(0, q.ledger.GPUs-q.cfg.Shares.Sum())
		for i, s := range q.cfg.Shares {
			if s.Lend || i == q.acct[j] {
				lendable += s.GPUs
			}
		}
		return g.jobs[j].GPUs > lendable
	}
	return false
}

// admitted counts a queued job as waiting and says whether it asks within
// its account's share: what the account holds and waits for before it,
// plus the job, within the share (an owner's job: its wait is measured).
func (q *quotaSim) admitted(g *gangSim, j int32) {
	if q == nil || q.acct[j] < 0 {
		return
	}
	name, gpus := q.account(g, j), g.jobs[j].GPUs
	u, _ := q.ledger.Usage(name)
	g.out[j].Owner = u.InUse+u.Waiting+gpus <= q.share(j)
	q.ledger.Queue(name, gpus)
	q.changed()
}

// cancelled takes a waiting job that was cancelled off its account.
func (q *quotaSim) cancelled(g *gangSim, j int32) {
	if q == nil || q.acct[j] < 0 {
		return
	}
	q.ledger.Cancel(q.account(g, j), g.jobs[j].GPUs)
	q.changed()
}

// allows says whether the quota lets job j start now.
func (q *quotaSim) allows(g *gangSim, j int32) bool {
	if q == nil || q.acct[j] < 0 {
		return true
	}
	name, gpus := q.account(g, j), g.jobs[j].GPUs
	switch q.cfg.Mode {
	case QuotaHard:
		u, _ := q.ledger.Usage(name)
		return u.InUse+gpus <= q.share(j)
	case QuotaDynamic:
		if q.ledger.Entitled(name, gpus) {
			return true
		}
		// the time limit the job asked for (the replay's: its run time
		// times the limit factor, its own where the trace gives one)
		limit := time.Duration(g.limitWith(j, 1) * float64(time.Second))
		return !quota.OverBorrowBound(q.cfg.BorrowMaxGPUHours, gpus, limit) && q.ledger.MayBorrow(name, gpus)
	}
	return true
}

// started counts job j as running, borrowing when it is beyond its share.
func (q *quotaSim) started(g *gangSim, j int32) {
	if q == nil {
		return
	}
	name, gpus := q.account(g, j), g.jobs[j].GPUs
	q.borrowing[j] = q.acct[j] >= 0 && q.cfg.Mode == QuotaDynamic && !q.ledger.Entitled(name, gpus)
	q.ledger.Start(name, gpus, q.borrowing[j])
	if q.borrowing[j] {
		q.lend(g.allocs[j], 1)
	}
	q.changed()
}

// lend counts the GPUs of a borrowing job's allocation on lentOn (by = 1)
// or takes them off (by = -1).
func (q *quotaSim) lend(a occupancy.Allocation, by int) {
	for _, na := range a.Nodes {
		q.lentOn[na.Node] += by * len(na.GPUs)
	}
}

// lends says whether job j would start borrowing now, and the engine's
// lending placement is to place it (see Quota).
func (q *quotaSim) lends(g *gangSim, j int32) bool {
	return q != nil && !q.cfg.LendAnywhere && q.cfg.Mode == QuotaDynamic && q.acct[j] >= 0 &&
		!q.ledger.Entitled(q.account(g, j), g.jobs[j].GPUs)
}

// stopped counts running job j as gone; requeued: it waits again.
func (q *quotaSim) stopped(g *gangSim, j int32, requeued bool) {
	if q == nil {
		return
	}
	q.ledger.Stop(q.account(g, j), g.jobs[j].GPUs, q.borrowing[j], requeued && q.acct[j] >= 0)
	if q.borrowing[j] {
		q.lend(g.allocs[j], -1)
	}
	q.borrowing[j] = false
	q.changed()
}

// nextEvent is the next controller cycle with work (+Inf when none).
func (q *quotaSim) nextEvent() float64 {
	if q == nil {
		return math.Inf(1)
	}
	return q.next
}

// book schedules the next cycle after a pass at t when a reclaim may be
// due: some account waits while below its share, and others borrow.
func (q *quotaSim) book(t float64) {
	if q == nil || q.cfg.Mode != QuotaDynamic {
		return
	}
	q.next = math.Inf(1)
	l := q.live()
	if l.Borrowed == 0 {
		return
	}
	for _, u := range l.Accounts {
		if u.Waiting > 0 && u.InUse < u.Guaranteed {
			q.next = math.Floor(t/q.cfg.Interval)*q.cfg.Interval + q.cfg.Interval
			return
		}
	}
}

// cycle is the controller's reclaim at t; it reports whether it started a
// job (the queue then needs a full pass).
func (q *quotaSim) cycle(g *gangSim, t float64) bool {
	q.next = math.Inf(1)
	acted := 0
	for _, j := range q.entitled(g) {
		if acted >= q.cfg.MaxPerCycle || g.err != nil || q.live().Borrowed == 0 {
			break
		}
		if v, ok := q.failed[j]; ok && v == q.version {
			continue
		}
		if q.reclaim(g, t, j) {
			acted++
			delete(q.failed, j)
		} else {
			q.failed[j] = q.version
		}
	}
	return acted > 0
}

// entitled lists the waiting jobs within their account's share, in queue
// order, counted as if each started (quotaexec's moves): a later job of
// the same account is entitled only if the earlier ones leave room.
func (q *quotaSim) entitled(g *gangSim) []int32 {
	var ours []int32
	var jobs []quota.Job
	for _, j := range g.queue {
		if q.acct[j] >= 0 {
			ours = append(ours, j)
			jobs = append(jobs, quota.Job{Account: q.cfg.Shares[q.acct[j]].Account, GPUs: g.jobs[j].GPUs})
		}
	}
	var out []int32
	for i, a := range q.live().Admit(jobs) {
		if a == quota.Within {
			out = append(out, ours[i])
		}
	}
	return out
}

// reclaim plans for entitled job j and carries the plan out: the victims
// requeued now, j started on their GPUs after the requeue delay. A plan
// with nothing to evict means j fits now: the scheduler's to start.
func (q *quotaSim) reclaim(g *gangSim, t float64, j int32) bool {
	view, running := g.runningView()
	now := q.epoch.Add(time.Duration(t * float64(time.Second)))
	// every queued job has been through a scheduling pass on the state of
	// now: if it fits the free GPUs, they are reserved for an older job
	opts := quota.ReclaimOptions{
		PassedOver: true,
		Holder: func(k int) (string, bool) {
			r := running[k]
			if q.acct[r] < 0 {
				return "", false
			}
			return q.cfg.Shares[q.acct[r]].Account, q.borrowing[r]
		},
		Cost: func(k int) float64 {
			r := running[k]
			o := &g.out[r]
			job := defrag.Job{Requeue: true, Start: q.epoch.Add(time.Duration(o.Start * float64(time.Second))), Restarts: o.Requeues}
			return q.cfg.Cost.Cost(job, g.jobs[r].GPUs, now, 0)
		},
	}
	plan, ok := quota.Reclaim(q.eng, view, *g.request(j), q.live(), opts)
	if !ok || len(plan.Evict) == 0 || plan.Gang.Status != place.Placed {
		return false
	}
	for _, k := range plan.Evict {
		g.requeue(t, running[k])
	}
	if err := g.checkAlloc(j, plan.Gang.Alloc); err != nil {
		g.fail(err)
		return false
	}
	g.queue = slices.DeleteFunc(g.queue, func(x int32) bool { return x == j })
	var feasible topology.Tier
	if g.jobs[j].GPUs >= 2 {
		feasible = g.feas.tightest(g.s, g.jobs[j].GPUs)
	}
	g.commit(t+q.cfg.RequeueDelay, j, plan.Gang.Alloc, feasible)
	g.res.QuotaReclaims++
	return true
}
