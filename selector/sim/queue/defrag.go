package queue

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Defrag is the controller's defragmentation policy as the replay models
// it (cmd/gangtopo's controller, gangtopo.yaml defrag.auto): every
// Interval seconds, each queued gang of at least MinGPUs GPUs that has
// waited at least MinWait gets a plan (selector/defrag.For, the planner the
// controller uses) if one costs at most MaxCost and the Limits allow it;
// at most MaxPerCycle plans a cycle.
//
// What is modelled: every running job may be requeued (the trace says
// nothing of --no-requeue; defrag.Scope is the site's), except one
// requeued, or a gang started by a plan, within Limits.Window; a victim's
// cost is CostModel.Cost with its start time and requeues (no checkpoints,
// no priorities in the trace); a requeued job loses what it ran and goes
// back to the queue in its submit order, to run its whole duration again;
// the gang starts at once on the freed nodes (in Slurm the reservation
// holds them while the victims drain, seconds against waits of hours). The
// budget counts CostModel.Lost (restart overhead included), the report the
// GPU-hours of run time actually lost.
type Defrag struct {
	MinGPUs     int
	MinWait     float64 // seconds
	MaxCost     float64 // weighted GPU-hours; 0: no cap
	MaxPerCycle int
	// Interval is how often the policy is evaluated, in replay seconds.
	Interval float64
	// Retry: a gang for which no plan passed is not planned for again
	// within this many seconds; MaxTries bounds the gangs planned for in
	// one cycle (the oldest first). Both keep a cycle cheap when many big
	// gangs wait; the controller has the same bounds.
	Retry    float64
	MaxTries int
	Limits   defrag.Limits
	Cost     defrag.CostModel
}

// Requeue is one job requeued by a plan: it ran from Start to At, on
// Used.
type Requeue struct {
	Job       int32
	Start, At float64
	GPUs      int
	Used      []NodeGPUs
}

// defragger is the replay's policy state.
type defragger struct {
	cfg   Defrag
	eng   *place.Engine
	hist  defrag.History
	epoch time.Time // replay second 0, for the History's clock
	next  float64
	// refused: gang -> when a plan for it last failed to pass.
	refused map[int32]float64
}

func newDefragger(c *topology.Cluster, cfg *Defrag) *defragger {
	if cfg == nil {
		return nil
	}
	d := &defragger{cfg: *cfg, eng: place.New(c, place.Options{}), next: math.Inf(1),
		epoch: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), refused: map[int32]float64{}}
	if d.cfg.Interval <= 0 {
		d.cfg.Interval = 60
	}
	if d.cfg.MaxPerCycle <= 0 {
		d.cfg.MaxPerCycle = 1
	}
	return d
}

func (d *defragger) clock(t float64) time.Time {
	return d.epoch.Add(time.Duration(t * float64(time.Second)))
}

// nextEvent is the next cycle at which a queued gang is old enough
// (+Inf when none, or when the policy is off).
func (d *defragger) nextEvent() float64 {
	if d == nil {
		return math.Inf(1)
	}
	return d.next
}

// book schedules the next cycle after a pass at t: the first cycle at
// which some queued gang has waited MinWait.
func (d *defragger) book(g *gangSim, t float64) {
	if d == nil {
		return
	}
	d.next = math.Inf(1)
	for _, j := range g.queue {
		job := &g.jobs[j]
		if job.GPUs < d.cfg.MinGPUs {
			continue
		}
		due := max(job.Submit+d.cfg.MinWait, t+d.cfg.Interval)
		d.next = min(d.next, math.Ceil(due/d.cfg.Interval)*d.cfg.Interval)
	}
}

// cycle evaluates the policy at t; it reports whether it started a gang
// (the queue then needs a full pass).
func (d *defragger) cycle(g *gangSim, t float64) bool {
	d.next = math.Inf(1)
	now := d.clock(t)
	d.hist.Forget(now, d.cfg.Limits.Keep())
	acted := 0
	if d.hist.Allow(1, 0, g.c.NumGPUs(), now, d.cfg.Limits) == nil && d.spare(g, now) {
		for _, j := range d.due(g, t) {
			if acted >= d.cfg.MaxPerCycle || g.err != nil {
				break
			}
			if d.try(g, t, j) {
				acted++
				delete(d.refused, j)
			} else {
				d.refused[j] = t
			}
		}
	}
	d.book(g, t)
	return acted > 0
}

// due lists the gangs to plan for at t: old enough, not refused within
// Retry, at most MaxTries of them, oldest first.
func (d *defragger) due(g *gangSim, t float64) []int32 {
	var due []int32
	for _, j := range g.queue {
		job := &g.jobs[j]
		if job.GPUs < d.cfg.MinGPUs || t-job.Submit < d.cfg.MinWait {
			continue
		}
		if at, ok := d.refused[j]; ok && t-at < d.cfg.Retry {
			continue
		}
		if due = append(due, j); d.cfg.MaxTries > 0 && len(due) >= d.cfg.MaxTries {
			break
		}
	}
	return due
}

// spare says whether the budget has room for the least a requeue loses:
// one GPU's restart overhead.
func (d *defragger) spare(g *gangSim, now time.Time) bool {
	return d.hist.Allow(1, d.cfg.Cost.Lost(defrag.Job{}, 1, now), g.c.NumGPUs(), now, d.cfg.Limits) == nil
}

// admitted books the cycle at which a gang just queued will have waited
// MinWait.
func (d *defragger) admitted(g *gangSim, j int32) {
	if d == nil || g.jobs[j].GPUs < d.cfg.MinGPUs {
		return
	}
	due := g.jobs[j].Submit + d.cfg.MinWait
	d.next = min(d.next, math.Ceil(due/d.cfg.Interval)*d.cfg.Interval)
}

// try plans for queued gang j and carries the plan out if allowed.
func (d *defragger) try(g *gangSim, t float64, j int32) bool {
	now := d.clock(t)
	view, running := g.runningView()
	victim := func(k int) defrag.Job {
		r := running[k]
		return defrag.Job{Requeue: true, Start: d.clock(g.out[r].Start), Restarts: g.out[r].Requeues}
	}
	opts := defrag.Options{
		Evictable: func(k int) bool { return !d.hist.Protected(view.Jobs[k].ID, now, d.cfg.Limits) },
		Cost:      func(k int) float64 { return d.cfg.Cost.Cost(victim(k), g.jobs[running[k]].GPUs, now, 0) },
	}
	p, ok := defrag.For(d.eng, view, *g.request(j), opts)
	if !ok || p.Gang.Status != place.Placed || d.cfg.MaxCost > 0 && p.Cost > d.cfg.MaxCost {
		return false
	}
	lost := 0.0
	for _, k := range p.Evict {
		lost += d.cfg.Cost.Lost(victim(k), g.jobs[running[k]].GPUs, now)
	}
	if d.hist.Allow(len(p.Evict), lost, g.c.NumGPUs(), now, d.cfg.Limits) != nil {
		return false
	}
	victims := make([]int32, len(p.Evict))
	for i, k := range p.Evict {
		victims[i] = running[k]
	}
	for _, v := range victims {
		d.hist.Add(defrag.Record{At: now, Kind: defrag.Requeued, Job: strconv.Itoa(int(v)), GPUs: g.jobs[v].GPUs,
			Lost: d.cfg.Cost.Lost(defrag.Job{Start: d.clock(g.out[v].Start)}, g.jobs[v].GPUs, now)})
		g.requeue(t, v)
	}
	d.hist.Add(defrag.Record{At: now, Kind: defrag.Started, Job: strconv.Itoa(int(j)), GPUs: g.jobs[j].GPUs})
	g.queue = slices.DeleteFunc(g.queue, func(q int32) bool { return q == j })
	var feasible topology.Tier
	if g.jobs[j].GPUs >= 2 {
		feasible = g.feas.tightest(g.s, g.jobs[j].GPUs)
	}
	g.commit(t, j, p.Gang.Alloc, feasible)
	g.res.DefragPlans++
	return true
}

// runningView is the snapshot with its running jobs listed (job IDs are
// the replay's job indices), what the controller's planners see, and the
// replay job of each snapshot job.
func (g *gangSim) runningView() (*occupancy.Snapshot, []int32) {
	view := *g.s
	running := slices.Clone(g.running.jobs)
	view.Jobs = make([]occupancy.Job, len(running))
	for k, r := range running {
		view.Jobs[k] = occupancy.Job{ID: strconv.Itoa(int(r)), Alloc: g.allocs[r]}
	}
	return &view, running
}

// requeue stops running job j at t: its GPUs are released, what it ran is
// lost, and it waits again in its submit order.
func (g *gangSim) requeue(t float64, j int32) {
	g.res.Requeues = append(g.res.Requeues, Requeue{Job: j, Start: g.out[j].Start, At: t, GPUs: g.jobs[j].GPUs, Used: g.out[j].Used})
	g.out[j].Requeues++
	g.stopRun(t, j)
	g.enqueue(j)
}

// stopRun stops running job j at t: its GPUs are released and what it
// ran is lost (counted in Ran).
func (g *gangSim) stopRun(t float64, j int32) {
	o := &g.out[j]
	if err := g.s.Release(g.allocs[j]); err != nil {
		g.fail(err)
		return
	}
	g.free += g.jobs[j].GPUs
	g.plan.remove(g.expEnd[j], j)
	g.running.remove(j)
	g.quota.stopped(g, j, true)
	o.Used = nil
	o.Ran += t - o.Start
	o.Start, o.End = math.NaN(), math.NaN()
	g.allocs[j] = occupancy.Allocation{}
}
