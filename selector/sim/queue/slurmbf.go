package queue

import (
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Slurm's backfill cycle (plugins/sched/backfill/backfill.c,
// _attempt_backfill), as Config.Timing runs it unless Timing.EASY:
//
//   - The pending jobs are tested in priority order, at most
//     MaxJobTest of them (bf_max_job_test, 500).
//   - For each, the earliest time T at which the policy places it, when
//     the running jobs have ended at their expected ends (start + limit)
//     and with the nodes of every reservation made so far in this cycle
//     that overlaps [T, T + limit) taken away (Slurm's node_space map: a
//     reservation holds whole nodes for its time). T is tried at now,
//     then at each expected end and each reservation's start and end.
//   - T = now: the job starts. Otherwise it gets a reservation of the
//     nodes it would get, from T to T + limit, both rounded down to
//     Resolution (bf_resolution, 60 s) as Slurm rounds them, unless T is
//     beyond bf_window (a day).
//
// So every job tested holds its place, not only the first blocked one
// (the replay's EASY backfill, backfill.go): a later job starts now only
// if it delays none of them. What slurmctld also does and this does not:
// bf_continue, per-user and per-partition limits of the cycle, licenses,
// the time a cycle takes.

// bfWindow is bf_window's default, one day.
const bfWindow = 86400

// bfResv is a reservation of one cycle.
type bfResv struct {
	nodes    []topology.NodeID
	from, to float64
}

// slurmBackfill runs one backfill cycle at t.
func (g *gangSim) slurmBackfill(t float64) {
	g.res.Passes++
	g.passBy = "backfill"
	g.resv.valid = false
	var resvs []bfResv
	tested, w := 0, 0
	for i := 0; i < len(g.queue); i++ {
		j := g.queue[i]
		if g.err == nil && tested < g.clock.t.maxJobTest() && g.quota.allows(g, j) {
			tested++
			if g.bfTry(t, j, &resvs) {
				if i > 0 {
					g.out[j].Backfilled = true
				}
				continue
			}
		}
		g.queue[w] = j
		w++
	}
	g.queue = g.queue[:w]
}

// bfTry starts job j now if that delays no reservation, or reserves its
// earliest start.
func (g *gangSim) bfTry(t float64, j int32, resvs *[]bfResv) bool {
	limit := g.limitWith(j, 1)
	r := g.request(j)
	ends := g.plan.ends
	k, avail, gpus := 0, g.free, g.jobs[j].GPUs
	g.undo = g.undo[:0]
	defer g.bfRestore()
	for _, at := range g.bfTimes(t, *resvs) {
		for ; at > t && k < len(ends) && ends[k].at <= at; k++ {
			g.release(ends[k].job, false)
			avail += g.jobs[ends[k].job].GPUs
		}
		if avail < gpus {
			continue // too few GPUs free by then, reservations aside: no Place call
		}
		masked := g.bfMask(*resvs, at, at+limit)
		g.res.PlaceCalls++
		a, ok := g.placePolicy(j, r)
		g.bfUnmask(masked)
		if !ok {
			if at == t && g.rebind != nil {
				// the controller sees the job pending on the live state
				g.rebind.declined(g, t, j)
			}
			continue
		}
		if at == t {
			return g.bfStart(t, j, a)
		}
		res := g.clock.t.resolution()
		down := func(x float64) float64 { return math.Floor((g.clock.t.Epoch+x)/res)*res - g.clock.t.Epoch }
		rv := bfResv{from: down(at), to: down(at + limit)}
		for _, na := range a.Nodes {
			rv.nodes = append(rv.nodes, na.Node)
		}
		*resvs = append(*resvs, rv)
		return false
	}
	return false
}

// bfStart starts job j now with allocation a (found on the live snapshot
// with no job released).
func (g *gangSim) bfStart(t float64, j int32, a occupancy.Allocation) bool {
	if err := g.checkAlloc(j, a); err != nil {
		g.fail(err)
		return false
	}
	var feasible topology.Tier
	if gpus := g.jobs[j].GPUs; gpus >= 2 {
		feasible = g.feas.tightest(g.s, gpus)
	}
	g.commit(t, j, a, feasible)
	return true
}

// bfRestore gives the jobs released for planning their GPUs back.
func (g *gangSim) bfRestore() {
	for i := len(g.undo) - 1; i >= 0; i-- {
		if err := g.s.Allocate(g.allocs[g.undo[i]]); err != nil {
			g.fail(err)
		}
	}
	g.undo = g.undo[:0]
}

// bfTimes are the start times worth trying: now, then every expected end
// and every reservation's start and end after now, within bf_window.
func (g *gangSim) bfTimes(t float64, resvs []bfResv) []float64 {
	times := []float64{t}
	for _, e := range g.plan.ends {
		times = append(times, max(e.at, t+1e-9))
	}
	for _, r := range resvs {
		times = append(times, r.from, r.to)
	}
	slices.Sort(times)
	out := times[:1]
	for _, x := range times[1:] {
		if x > out[len(out)-1] && x > t && x <= t+bfWindow {
			out = append(out, x)
		}
	}
	return out
}

// bfMask drains the nodes of the reservations overlapping [from, to) for
// a Place call and returns what to restore.
func (g *gangSim) bfMask(resvs []bfResv, from, to float64) []savedState {
	var saved []savedState
	for _, r := range resvs {
		if r.from >= to || r.to <= from {
			continue
		}
		for _, id := range r.nodes {
			saved = append(saved, savedState{id, g.s.State[id]})
			g.s.SetState(id, occupancy.StateDrain)
		}
	}
	return saved
}

func (g *gangSim) bfUnmask(saved []savedState) {
	for i := len(saved) - 1; i >= 0; i-- {
		g.s.SetState(saved[i].id, saved[i].st)
	}
}

type savedState struct {
	id topology.NodeID
	st occupancy.NodeState
}
