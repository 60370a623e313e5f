package queue

import (
	"fmt"
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The queue: FIFO by priority with EASY backfill.
//
// What is modelled, after Slurm's sched/backfill with one partition:
//
//   - Priority is submit order (Slurm's default priority/basic, and what
//     priority/multifactor reduces to with equal ages weighted alone).
//   - FIFO: at each scheduling pass the oldest waiting jobs start, in
//     order, as long as the policy places them; the first that does not
//     fit blocks the jobs behind it (Slurm's main scheduler stops at it).
//   - Reservation: the blocked job gets one: the earliest time T at which
//     the policy would place it if running jobs ended at their expected
//     end (start + time limit), and the nodes it would get then.
//   - Backfill: every later job, in order, may start now if the policy
//     places it and it does not delay the reservation: it ends (by its
//     time limit) no later than T, or it keeps off the reserved nodes
//     (they are hidden from the policy for that call, as Slurm's backfill
//     removes a reservation's nodes for the overlapping time).
//   - Only the first blocked job has a reservation (EASY); Slurm's
//     backfill plans up to bf_max_job_test jobs, each with a reservation,
//     which is more conservative. Backfill runs at every event rather
//     than every bf_interval (30 s), and scheduling takes no time.
//   - Time limits are exact, the usual assumption of backfill studies: a
//     job's limit is its run time where it is placed, duration x slowdown,
//     times LimitFactor (1 by default; more models users who pad their
//     limits). So a candidate for backfill is checked against T with the
//     placement the policy would give it. A limit of the bare trace
//     duration would be exceeded by every slowed job, which Slurm would
//     kill and the replay cannot (the trace says how long the job ran);
//     the planner would then count such jobs as ending "now", again and
//     again, and pin reservations on nodes that stay busy for hours.
//
// Cost: a job is tried only when the free GPUs (outside the reservation,
// where it applies) could hold it, and once a job of g GPUs fails in a
// pass no job of g or more is tried again in that pass (fit is monotone
// and free capacity only shrinks within a pass). A pass stops as soon as
// nothing could start. A pass triggered only by submissions (no GPU was
// released) tries just the new jobs: the others failed against at least
// as much free capacity and the reservation still holds.

// reservation is the EASY reservation of the first blocked job. It is
// planned lazily: counting the GPUs that running jobs release, in order of
// expected end, gives a lower bound lb of the reservation time for free;
// the time itself and the nodes (a Place call on the snapshot as it would
// be then) are worked out only when a backfill candidate needs them, one
// that would still run at lb and could use GPUs free now.
type reservation struct {
	valid   bool
	job     int32
	lb      float64 // no earlier than this; +Inf when the job cannot be planned
	planned bool
	at      float64 // T, once planned; +Inf when the job cannot be planned
	nodes   []topology.NodeID
	saved   []occupancy.NodeState
	first   int // index in plan.ends of the first group to release
}

// schedule runs one pass at time t.
func (g *gangSim) schedule(t float64, released bool, firstNew int) {
	g.now = t
	h := g.head()
	if h < 0 {
		g.resv.valid = false
		return
	}
	if !released && g.resv.valid && g.resv.job == g.queue[h] {
		g.backfill(t, firstNew)
		return
	}
	g.res.Passes++
	for ; h >= 0 && g.tryStart(t, g.queue[h]); h = g.head() {
		g.queue = slices.Delete(g.queue, h, h+1)
	}
	if h < 0 || g.err != nil {
		g.resv.valid = false
		return
	}
	g.reserve(t, g.queue[h])
	g.backfill(t, h+1)
}

// head is the position of the first queued job the quota lets start, -1
// when none: Slurm's scheduler passes over a job its QOS limit holds (it
// neither starts nor blocks the jobs behind it, and gets no
// reservation). Without a quota, the oldest job.
func (g *gangSim) head() int {
	for i, j := range g.queue {
		if g.quota.allows(g, j) {
			return i
		}
	}
	return -1
}

// tryStart places job j now on the whole cluster and starts it if the
// policy finds room.
func (g *gangSim) tryStart(t float64, j int32) bool {
	a, feasible, ok := g.place(j, false)
	if ok {
		g.commit(t, j, a, feasible)
	}
	return ok
}

// place asks the policy for job j, on the whole cluster or (masked)
// outside the reserved nodes, without taking anything. feasible is the
// tightest tier that could have held it (jobs of 2 or more GPUs).
func (g *gangSim) place(j int32, masked bool) (occupancy.Allocation, topology.Tier, bool) {
	gpus := g.jobs[j].GPUs
	avail := g.free
	if masked {
		avail -= g.reservedFree()
	}
	if gpus > avail || g.err != nil {
		return occupancy.Allocation{}, 0, false
	}
	if masked {
		g.mask()
		defer g.unmask()
	}
	if g.hopeless(j, false) {
		return occupancy.Allocation{}, 0, false
	}
	g.res.PlaceCalls++
	a, ok := g.placePolicy(j, g.request(j))
	if !ok {
		if g.rebind != nil {
			// on the whole state, as the controller sees it: it knows
			// nothing of the nodes Slurm's backfill reserves
			g.unmask()
			g.rebind.declined(g, g.now, j)
		}
		return a, 0, false
	}
	if err := g.checkAlloc(j, a); err != nil {
		g.fail(err)
		return a, 0, false
	}
	if masked && g.usesReserved(a) {
		g.fail(fmt.Errorf("%s was placed on a node reserved for %s (drained for the call)", g.jobs[j].Name, g.jobs[g.resv.job].Name))
		return a, 0, false
	}
	var feasible topology.Tier
	if gpus >= 2 {
		feasible = g.feas.tightest(g.s, gpus)
	}
	return a, feasible, true
}

// placePolicy asks the policy where job j (request r) starts on g.s now:
// with the lending placement when j would start borrowing and the policy
// has one (Quota), else Place.
func (g *gangSim) placePolicy(j int32, r *request.Request) (occupancy.Allocation, bool) {
	if lp, ok := g.pol.(LendPlacer); ok && g.quota.lends(g, j) {
		return lp.PlaceLent(g.s, r, g.quota.lentOn)
	}
	return g.pol.Place(g.s, r)
}

// commit starts job j with allocation a.
func (g *gangSim) commit(t float64, j int32, a occupancy.Allocation, feasible topology.Tier) {
	if err := g.s.Allocate(a); err != nil {
		g.fail(fmt.Errorf("%s: %v", g.jobs[j].Name, err))
		return
	}
	g.start(t, j, a, feasible)
}

// reserve sets up the reservation of the blocked job head: its lower
// bound is the expected end at which the released GPUs, with the free
// ones, first reach its size.
func (g *gangSim) reserve(t float64, head int32) {
	need := g.jobs[head].GPUs
	avail := g.free
	g.resv = reservation{valid: true, job: head, lb: math.Inf(1), at: math.Inf(1), nodes: g.resv.nodes[:0], saved: g.resv.saved[:0]}
	ends := g.plan.ends
	for k := 0; k < len(ends); k++ {
		avail += g.jobs[ends[k].job].GPUs
		if avail >= need {
			g.resv.lb = max(t, ends[k].at)
			g.resv.first = k
			return
		}
	}
}

// planReservation works out the reservation's time and nodes: release
// running jobs in order of expected end (on the live snapshot, undone
// afterwards) until the policy places the blocked job.
func (g *gangSim) planReservation(t float64) {
	rv := &g.resv
	rv.planned = true
	if math.IsInf(rv.lb, 1) {
		return
	}
	r := g.request(rv.job)
	_, required := g.requiredTier(rv.job)
	g.undo = g.undo[:0]
	ends := g.plan.ends
	placed, counted := false, false
	for k := 0; k < len(ends) && !placed && g.err == nil; {
		when := max(t, ends[k].at)
		for ; k < len(ends) && (max(t, ends[k].at) == when || k <= rv.first); k++ {
			when = max(t, ends[k].at)
			g.release(ends[k].job, counted)
		}
		if required && !counted {
			// Count once, then follow the releases.
			g.feas.fill(g.s)
			counted = true
		}
		if g.hopeless(rv.job, counted) {
			continue
		}
		g.res.PlaceCalls++
		if a, ok := g.placePolicy(rv.job, r); ok {
			placed, rv.at = true, when
			for _, na := range a.Nodes {
				rv.nodes = append(rv.nodes, na.Node)
			}
		}
	}
	for i := len(g.undo) - 1; i >= 0; i-- {
		if err := g.s.Allocate(g.allocs[g.undo[i]]); err != nil {
			g.fail(fmt.Errorf("restoring after planning: %v", err))
		}
	}
	if g.onPlan != nil {
		g.onPlan(rv.job, rv.at)
	}
}

// release frees a running job's GPUs on the snapshot for planning and
// remembers it for the undo; counted: keep the feasibility counts in step.
func (g *gangSim) release(j int32, counted bool) {
	if err := g.s.Release(g.allocs[j]); err != nil {
		g.fail(err)
	}
	if counted {
		g.feas.add(g.allocs[j], 1)
	}
	g.undo = append(g.undo, j)
}

// before reports whether a job started now that ends at end (by its limit)
// ends no later than the reservation, planning it when the lower bound
// does not decide.
func (g *gangSim) before(t, end float64) bool {
	if end <= g.resv.lb {
		return true
	}
	if !g.resv.planned {
		g.planReservation(t)
	}
	return end <= g.resv.at
}

// backfill tries the queued jobs from position from on, in order, against
// the reservation, and removes those that start.
func (g *gangSim) backfill(t float64, from int) {
	bf := backfillPass{minU: math.MaxInt, minM: math.MaxInt}
	w, i := from, from
	for ; i < len(g.queue) && g.err == nil; i++ {
		j := g.queue[i]
		if g.backfillOne(t, j, &bf) {
			g.out[j].Backfilled = true
			continue
		}
		g.queue[w] = j
		w++
		freeM := g.free // an upper bound until the reservation is planned
		if g.resv.planned {
			freeM -= g.reservedFree()
		}
		if (g.free == 0 || bf.minU <= 1) && (freeM <= 0 || bf.minM <= 1) {
			i++
			break
		}
	}
	if w < i {
		g.queue = slices.Delete(g.queue, w, i)
	}
}

// backfillPass remembers, within one pass, the smallest job size that
// failed on the whole cluster (minU) and outside the reservation (minM).
type backfillPass struct{ minU, minM int }

// backfillOne starts job j if that does not delay the reservation: placed
// on the whole cluster when it would end by T, else outside the reserved
// nodes.
func (g *gangSim) backfillOne(t float64, j int32, bf *backfillPass) bool {
	job := &g.jobs[j]
	gpus := job.GPUs
	if gpus > g.free || gpus >= bf.minU && gpus >= bf.minM || !g.quota.allows(g, j) {
		return false
	}
	if g.rebind != nil || g.mixed {
		// fit depends on each job's binding or request, not on its size alone
		defer func() { bf.minU, bf.minM = math.MaxInt, math.MaxInt }()
	}
	// The run time is known once placed; at slowdown 1 it is the least.
	if gpus < bf.minU && g.before(t, t+g.limitWith(j, 1)) {
		a, feasible, ok := g.place(j, false)
		switch {
		case !ok:
			bf.minU, bf.minM = gpus, min(bf.minM, gpus) // masked is a subset
			return false
		case g.before(t, t+g.limitOn(j, a)):
			g.commit(t, j, a, feasible)
			return true
		}
	}
	if gpus >= bf.minM {
		return false
	}
	a, feasible, ok := g.place(j, true)
	if !ok {
		bf.minM = gpus
		return false
	}
	g.commit(t, j, a, feasible)
	return true
}

// reservedFree counts the whole free GPUs on the reserved nodes.
func (g *gangSim) reservedFree() int {
	n := 0
	for _, id := range g.resv.nodes {
		n += g.s.WholeFree(id)
	}
	return n
}

func (g *gangSim) usesReserved(a occupancy.Allocation) bool {
	for _, na := range a.Nodes {
		if slices.Contains(g.resv.nodes, na.Node) {
			return true
		}
	}
	return false
}

// mask hides the reserved nodes from the policy (marks them drained);
// unmask restores their states. Unmasking twice is harmless.
func (g *gangSim) mask() {
	g.resv.saved = g.resv.saved[:0]
	for _, id := range g.resv.nodes {
		g.resv.saved = append(g.resv.saved, g.s.State[id])
		g.s.SetState(id, occupancy.StateDrain)
	}
}

func (g *gangSim) unmask() {
	for i, st := range g.resv.saved {
		g.s.SetState(g.resv.nodes[i], st)
	}
	g.resv.saved = g.resv.saved[:0]
}
