package queue

import (
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/request"
)

// When slurmctld schedules (Config.Timing): without it the replay runs
// one pass at every event, the usual idealisation of backfill studies;
// with it, passes happen when slurmctld 22.05-26.05 runs them
// (src/slurmctld/controller.c, job_scheduler.c, plugins/sched/backfill):
//
//   - Submit. A job submitted while no job is pending is tried at once
//     (job_allocate: it is the top priority job); otherwise the submit
//     only asks for a main pass (queue_job_scheduler), which the
//     background loop runs on its next one-second tick once
//     BatchSchedDelay has passed since the last pass it ran.
//   - End. A job's end (its epilog complete) runs a main pass at once
//     (schedule(false) in _slurm_rpc_epilog_complete).
//   - Every SchedInterval the background loop runs a full main pass.
//   - The main pass starts jobs in priority order until one does not
//     fit; that one blocks its partition (failed_parts): no later job of
//     it is tried. It plans nothing.
//   - Backfill (backfill_agent) sleeps BackfillInterval, then runs as soon
//     as something changed since its last cycle (_more_work; it checks
//     every second): the first cycle at Boot + BackfillInterval when jobs
//     are there by then. A cycle is Slurm's backfill (slurmbf.go), or
//     with Timing.EASY the replay's full pass: the FIFO start, the
//     reservation and EASY backfill (backfill.go).
//
// Priority is submit order (priority/basic: job ID order), which the
// replay's queue keeps.

// Timing holds slurmctld's scheduler parameters (SchedulerParameters),
// in seconds. Slurm's defaults: DefaultTiming.
type Timing struct {
	// Boot is slurmctld's start in replay seconds (BOOT_TIME): the
	// backfill thread's clock starts there.
	Boot             float64
	BatchSchedDelay  float64 // batch_sched_delay, 3
	SchedInterval    float64 // sched_interval, 60
	BackfillInterval float64 // bf_interval, 30
	// Resolution (bf_resolution, 60) rounds a cycle's reservations down,
	// in wall-clock seconds: Epoch is replay second 0 as a Unix time.
	Resolution, Epoch float64
	// MaxJobTest is bf_max_job_test (500): the jobs a cycle tests.
	MaxJobTest int
	// EASY runs the replay's EASY backfill (one reservation, backfill.go)
	// in each cycle instead of Slurm's reservation for every job tested
	// (slurmbf.go): to see what the difference is worth.
	EASY bool
}

// DefaultTiming is Slurm's default SchedulerParameters, with slurmctld
// started at boot.
func DefaultTiming(boot float64) Timing {
	return Timing{Boot: boot, BatchSchedDelay: 3, SchedInterval: 60, BackfillInterval: 30, Resolution: 60, MaxJobTest: 500}
}

func (t *Timing) resolution() float64 {
	if t.Resolution < 1 {
		return 1
	}
	return t.Resolution
}

func (t *Timing) maxJobTest() int {
	if t.MaxJobTest < 1 {
		return math.MaxInt
	}
	return t.MaxJobTest
}

// clock tracks when the passes of Timing are due.
type clock struct {
	t Timing
	// lastBg is the last main pass the background loop ran (submits
	// wait BatchSchedDelay after it); mainDue a requested one (+Inf: none).
	lastBg, mainDue float64
	lastFull        float64
	// lastBF is the end of the last backfill cycle, changed the time of
	// the last change to jobs (submit, start, end, cancel).
	lastBF, changed float64
}

func newClock(t *Timing) *clock {
	if t == nil {
		return nil
	}
	return &clock{t: *t, lastBg: math.Inf(-1), mainDue: math.Inf(1), lastFull: t.Boot, lastBF: t.Boot, changed: math.Inf(-1)}
}

// bfDue is when the next backfill cycle runs: BackfillInterval after the
// last, or, when nothing changed by then, on the first one-second check
// after the next change (+Inf until there is one).
func (c *clock) bfDue() float64 {
	at := c.lastBF + c.t.BackfillInterval
	if c.changed <= c.lastBF {
		return math.Inf(1)
	}
	if c.changed <= at {
		return at
	}
	return at + math.Ceil(c.changed-at)
}

// fullDue is the next periodic full main pass.
func (c *clock) fullDue() float64 { return c.lastFull + c.t.SchedInterval }

// nextEvent is the clock's next pass while jobs wait (+Inf when none do:
// a pass over an empty queue changes nothing).
func (c *clock) nextEvent(waiting bool) float64 {
	if c == nil || !waiting {
		return math.Inf(1)
	}
	return min(c.bfDue(), c.mainDue, c.fullDue())
}

// requestMain asks for a main pass after a submit at t: on the
// background loop's next tick at least BatchSchedDelay after its last.
func (c *clock) requestMain(t float64) {
	at := max(t, c.lastBg+c.t.BatchSchedDelay)
	at = c.t.Boot + math.Ceil(at-c.t.Boot)
	c.mainDue = min(c.mainDue, at)
}

// timedPass runs what is due at t with Timing: released says jobs ended
// at t, firstNew is the queue position of the jobs submitted at t, and
// pendingBefore whether jobs were pending before they came.
func (g *gangSim) timedPass(t float64, released bool, firstNew int, pendingBefore bool) {
	c := g.clock
	g.now = t
	if released || len(g.queue) > firstNew {
		c.changed = t
	}
	if len(g.queue) > firstNew {
		if !pendingBefore {
			g.mainPass(t, "submit") // the top priority job is tried at submit
		}
		if len(g.queue) > 0 {
			c.requestMain(t)
		}
	}
	if released {
		g.mainPass(t, "main")
	}
	if t >= c.mainDue || t >= c.fullDue() {
		if t >= c.fullDue() {
			c.lastFull = t
		}
		c.mainDue, c.lastBg = math.Inf(1), t
		g.mainPass(t, "main")
	}
	if t >= c.bfDue() {
		if c.t.EASY {
			g.passBy = "backfill"
			g.schedule(t, true, 0)
		} else {
			g.slurmBackfill(t)
		}
		c.lastBF = t
	}
}

// mainPass is slurmctld's main scheduler: jobs start in priority order
// until one does not fit, which blocks the rest.
func (g *gangSim) mainPass(t float64, by string) {
	g.res.Passes++
	g.passBy = by
	started := false
	for h := g.head(); h >= 0 && g.tryStart(t, g.queue[h]); h = g.head() {
		g.queue = slices.Delete(g.queue, h, h+1)
		started = true
	}
	g.resv.valid = false // the next backfill cycle plans anew
	if started {
		g.clock.changed = t
	}
}

// runTime is how long the job runs at slowdown f: its duration times f,
// but no longer than its own limit (Slurm ends it there), unless its
// recorded duration already was (a history's TIMEOUT job, ended a little
// after its limit), and no later than its cancellation.
func (j *Job) runTime(f float64) float64 {
	d := j.Duration * f
	if j.Limit > 0 {
		d = min(d, max(j.Limit, j.Duration))
	}
	return d
}

// cancelWaiting takes the jobs whose Cancel time is t out of the queue
// (a running one ends at it: start capped its end); it reports whether
// any left the queue.
func (g *gangSim) cancelWaiting(t float64) bool {
	left := false
	for at, ok := g.cancels.next(); ok && at <= t; at, ok = g.cancels.next() {
		j := g.cancels.pop().job
		i := slices.Index(g.queue, j)
		if i < 0 {
			continue // running, ended or rejected
		}
		g.queue = slices.Delete(g.queue, i, i+1)
		g.out[j].Cancelled = true
		if g.resv.valid && g.resv.job == j {
			g.resv.valid = false
		}
		g.quota.cancelled(g, j)
		g.jobDone()
		left = true
	}
	return left
}

// reqKey identifies the requests jobs share: the same GPUs, node count
// and option ask the same.
type reqKey struct {
	gpus, nodes int
	opt         request.Option
}

func keyOf(j *Job) reqKey {
	k := reqKey{gpus: j.GPUs, nodes: j.Nodes}
	if j.Option != nil {
		k.opt = *j.Option
	}
	return k
}
