package replay

import (
	"fmt"
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
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
//     end (start + time limit, or now for a job already past its limit),
//     and the nodes it would get then.
//   - Backfill: every later job, in order, may start now if the policy
//     places it and it does not delay the reservation: it ends (by its
//     time limit) no later than T, or it keeps off the reserved nodes
//     (they are hidden from the policy for that call, as Slurm's backfill
//     removes a reservation's nodes for the overlapping time).
//   - Only the first blocked job has a reservation (EASY); Slurm's
//     backfill plans up to bf_max_job_test jobs, each with a reservation,
//     which is more conservative. Backfill runs at every event rather
//     than every bf_interval (30 s), and scheduling takes no time.
//   - Time limits are the trace durations times LimitFactor; a job that
//     runs past its limit (its placement slowed it) is not killed.
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
	if len(g.queue) == 0 {
		g.resv.valid = false
		return
	}
	if !released && g.resv.valid && g.resv.job == g.queue[0] {
		g.backfill(t, firstNew)
		return
	}
	g.res.Passes++
	for len(g.queue) > 0 && g.tryStart(t, g.queue[0], false) {
		g.queue = g.queue[1:]
	}
	if len(g.queue) == 0 || g.err != nil {
		g.resv.valid = false
		return
	}
	g.reserve(t, g.queue[0])
	g.backfill(t, 1)
}

// tryStart places job j now, on the whole cluster or (masked) outside the
// reserved nodes, and starts it if the policy finds room.
func (g *gangSim) tryStart(t float64, j int32, masked bool) bool {
	gpus := g.jobs[j].GPUs
	avail := g.free
	if masked {
		avail -= g.reservedFree()
	}
	if gpus > avail || g.err != nil {
		return false
	}
	if masked {
		g.mask()
		defer g.unmask()
	}
	g.res.PlaceCalls++
	a, ok := g.pol.Place(g.s, g.request(j))
	if !ok {
		return false
	}
	if err := g.checkAlloc(j, a); err != nil {
		g.fail(err)
		return false
	}
	if masked && g.usesReserved(a) {
		g.fail(fmt.Errorf("%s was placed on a node reserved for %s (drained for the call)", g.jobs[j].Name, g.jobs[g.resv.job].Name))
		return false
	}
	var feasible topology.Tier
	if gpus >= 2 {
		feasible = g.feas.tightest(g.s, gpus)
	}
	if masked {
		g.unmask()
	}
	if err := g.s.Allocate(a); err != nil {
		g.fail(fmt.Errorf("%s: %v", g.jobs[j].Name, err))
		return false
	}
	g.start(t, j, a, feasible)
	return true
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
	g.undo = g.undo[:0]
	ends := g.plan.ends
	placed := false
	for k := 0; k < len(ends) && !placed && g.err == nil; {
		when := max(t, ends[k].at)
		for ; k < len(ends) && (max(t, ends[k].at) == when || k <= rv.first); k++ {
			when = max(t, ends[k].at)
			g.release(ends[k].job)
		}
		g.res.PlaceCalls++
		if a, ok := g.pol.Place(g.s, r); ok {
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
}

// release frees a running job's GPUs on the snapshot for planning and
// remembers it for the undo.
func (g *gangSim) release(j int32) {
	if err := g.s.Release(g.allocs[j]); err != nil {
		g.fail(err)
	}
	g.undo = append(g.undo, j)
}

// endsBefore reports whether job j, started now, ends (by its limit) no
// later than the reservation, planning it when the bound does not decide.
func (g *gangSim) endsBefore(t float64, j int32) bool {
	end := t + g.limit(j)
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
	minU, minM := math.MaxInt, math.MaxInt // smallest size that failed: unmasked, masked
	w, i := from, from
	for ; i < len(g.queue) && g.err == nil; i++ {
		j := g.queue[i]
		gpus := g.jobs[j].GPUs
		started := false
		switch {
		case gpus > g.free || gpus >= minU && gpus >= minM:
		case g.endsBefore(t, j):
			if gpus < minU {
				if started = g.tryStart(t, j, false); !started {
					minU = gpus
				}
			}
		case gpus < minM:
			if started = g.tryStart(t, j, true); !started {
				minM = gpus
			}
		}
		if started {
			g.out[j].Backfilled = true
			continue
		}
		g.queue[w] = j
		w++
		freeM := g.free // an upper bound until the reservation is planned
		if g.resv.planned {
			freeM -= g.reservedFree()
		}
		if (g.free == 0 || minU <= 1) && (freeM <= 0 || minM <= 1) {
			i++
			break
		}
	}
	if w < i {
		g.queue = slices.Delete(g.queue, w, i)
	}
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
