package queue

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Node failures (Config.Failures).
//
// A failure takes a node down at its time: every job running on it is
// requeued, as Slurm requeues a batch job whose node fails (what it ran
// is lost; it keeps its place in submit order), and may start again only
// RequeueDelay later (Slurm's begin time after a requeue: the job
// credential's lifetime plus one second, 121 s by default). The node
// takes no job until it is repaired, Repair later. A failure on a node
// already down is dropped.
//
// With Expedite (Slurm 25.11 and later: SlurmctldParameters=
// enable_expedited_requeue, the job submitted with --requeue=expedite) a
// requeued job is eligible at once and waits at the top of the queue,
// ahead of every job not expedited, until it starts.
//
// A Restarting policy (the deployed path) is also told about the requeued
// job at the controller's first cycle after the failure (or when the job
// may start, if that comes first), with the nodes it ran on: the
// controller's re-binding of a gang requeued after a node failure. With
// AtRequeue the controller is told at the failure itself, before Slurm may
// start the job: the hook Slurm runs when the job ends (EpilogSlurmctld =
// gangtopo wake) holds the requeue until the controller has re-bound it.
// With AtOnce (gangtopo.yaml rebind.restart_at_once) that controller also
// makes the job eligible at its first cycle RestartMargin after the
// failure instead of RequeueDelay after it (`scontrol update StartTime=now`, once Slurm has
// finished the requeue: at that cycle even when AtRequeue re-bound it at
// the failure); it keeps its place in the queue.
//
// What is measured (Result.Restarts): for each requeued job, the time
// from the failure to its restart, and the tier it reached against the
// tier it had (Outcome.Tier before the failure), and whether it restarted
// inside the very domain of that tier it ran in.

// Failures configures node failures.
type Failures struct {
	// Events are the failures, by time (DrawFailures makes them).
	Events []NodeFailure
	// Repair is how long a failed node stays down, in seconds.
	Repair float64
	// RequeueDelay is how long after its failure a requeued job may start
	// again, in seconds; 0: DefaultRequeueDelay.
	RequeueDelay float64
	// Expedite requeues as Slurm's expedited requeue does: no delay, the
	// job at the top of the queue.
	Expedite bool
	// AtRequeue re-binds a requeued job (Restarting) at its failure, before
	// it may start, instead of at the controller's next cycle.
	AtRequeue bool
	// AtOnce makes a requeued job eligible at the controller's next cycle
	// (Restarting), not RequeueDelay after its failure; nothing with
	// Expedite.
	AtOnce bool
}

// NodeFailure is one node failing at a time (replay seconds).
type NodeFailure struct {
	At   float64
	Node topology.NodeID
}

// RestartMargin is how long after its requeue the controller makes a job
// eligible at the soonest (AtOnce), in seconds: a restart in the second of
// the requeue's kill is refused by the nodes' slurmd and the job killed
// for good (the controller's actuate.RequeueMargin).
const RestartMargin = 2

// DefaultRequeueDelay is Slurm's begin time after a requeue: the job
// credential's default lifetime (120 s) plus one (slurmctld's
// batch_requeue_fini).
const DefaultRequeueDelay = 121

// DrawFailures draws node failures over [0, horizon) seconds: a Poisson
// process at perNodeHour failures per node and hour over the cluster's
// nodes, each on a node drawn uniformly. seed makes it repeatable.
func DrawFailures(c *topology.Cluster, perNodeHour, horizon float64, seed uint64) []NodeFailure {
	n := len(c.Nodes)
	rate := perNodeHour * float64(n) / 3600 // failures per second
	if rate <= 0 || n == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x6661696c))
	var out []NodeFailure
	for t := rng.ExpFloat64() / rate; t < horizon; t += rng.ExpFloat64() / rate {
		out = append(out, NodeFailure{At: t, Node: topology.NodeID(rng.IntN(n))})
	}
	return out
}

// Restart is what became of one job requeued by a node failure.
type Restart struct {
	Job int32
	// At is the failure; Start the restart (NaN: it never restarted:
	// cancelled meanwhile, or the replay ended).
	At, Start float64
	// Old is the tier the job ran in, New the tier it restarted in;
	// SameDomain says it restarted inside the domain of tier Old it ran
	// in.
	Old, New   topology.Tier
	SameDomain bool
	// Spread: it ran on a node it did not fill (GPUs of other jobs, or
	// free ones, beside its own). Short: when it became eligible again,
	// the domain of tier Old it ran in had fewer whole free GPUs on nodes
	// that take work than it asks: what it freed on its healthy nodes had
	// gone to other jobs meanwhile. Together they say why a gang missed
	// its domain.
	Spread, Short bool
}

// Wait is the time from the failure to the restart.
func (r *Restart) Wait() float64 { return r.Start - r.At }

// Restarting is implemented by a Deciding policy whose controller
// re-binds a job requeued after a node failure: Restart is told the job
// and the nodes it ran on, on the state of the controller's cycle; false
// when it changed nothing.
type Restarting interface {
	Restart(s *occupancy.Snapshot, r *request.Request, ran []topology.NodeID) bool
}

// failSim is the replay's state of failures.
type failSim struct {
	cfg     *Failures
	next    int             // the next event of cfg.Events
	repairs endHeap         // node repairs, by time (job field: the node)
	back    endHeap         // requeued jobs that may start again, by time
	tell    endHeap         // requeued jobs the controller re-binds, by time
	ran     map[int32]ran   // requeued jobs not restarted yet
	delay   float64         // RequeueDelay
	down    map[int32]bool  // nodes down
	pol     Restarting      // nil: the policy does not re-bind
	every   float64         // the controller's cycle (Restarting)
	counts  map[int32]int32 // restart entry of each job in Result.Restarts
	top     map[int32]bool  // expedited jobs waiting (Expedite)
}

// ran is where a requeued job ran before its failure.
type ran struct {
	alloc occupancy.Allocation
	tier  topology.Tier
}

func newFailSim(cfg *Failures, p Policy) *failSim {
	if cfg == nil || len(cfg.Events) == 0 {
		return nil
	}
	f := &failSim{cfg: cfg, ran: map[int32]ran{}, down: map[int32]bool{}, delay: cfg.RequeueDelay, counts: map[int32]int32{}, top: map[int32]bool{}}
	switch {
	case cfg.Expedite:
		f.delay = 0
	case f.delay <= 0:
		f.delay = DefaultRequeueDelay
	}
	if r, ok := p.(Restarting); ok {
		if d, ok := p.(Deciding); ok && d.RebindInterval() > 0 {
			f.pol, f.every = r, d.RebindInterval()
		}
	}
	return f
}

// nextEvent is the time of the next failure, repair, controller call or
// requeued job becoming eligible; +Inf when none (or no failures).
func (f *failSim) nextEvent(queued bool) float64 {
	if f == nil {
		return math.Inf(1)
	}
	t := math.Inf(1)
	if f.next < len(f.cfg.Events) {
		t = f.cfg.Events[f.next].At
	}
	for _, h := range []endHeap{f.back, f.tell} {
		if at, ok := h.next(); ok {
			t = min(t, at)
		}
	}
	if at, ok := f.repairs.next(); ok && queued {
		t = min(t, at) // a repair matters only to a job waiting
	}
	return t
}

// busy says whether requeued jobs are still to come back, or, with jobs
// queued, nodes are still to be repaired.
func (f *failSim) busy(queued bool) bool {
	return f != nil && (len(f.back) > 0 || len(f.tell) > 0 || queued && len(f.repairs) > 0)
}

// step carries out the failure events at t; it reports whether the state
// changed for the waiting jobs (a repair, a requeued job back).
func (f *failSim) step(g *gangSim, t float64) bool {
	if f == nil {
		return false
	}
	changed := false
	for at, ok := f.repairs.next(); ok && at <= t; at, ok = f.repairs.next() {
		n := f.repairs.pop().job
		delete(f.down, n)
		g.s.SetState(topology.NodeID(n), occupancy.StateIdle)
		g.free += g.c.Nodes[n].NumGPUs()
		changed = true
	}
	for f.next < len(f.cfg.Events) && f.cfg.Events[f.next].At <= t {
		if f.fail(g, t, f.cfg.Events[f.next].Node) {
			changed = true // the requeued jobs' healthy nodes are free for the waiting ones
		}
		f.next++
	}
	for at, ok := f.tell.next(); ok && at <= t; at, ok = f.tell.next() {
		j := f.tell.pop().job
		if r, waiting := f.ran[j]; waiting && f.pol != nil && math.IsNaN(g.out[j].Start) {
			if f.pol.Restart(g.s, g.request(j), allocNodes(r.alloc)) {
				g.res.Rebinds++
			}
		}
	}
	for at, ok := f.back.next(); ok && at <= t; at, ok = f.back.next() {
		j := f.back.pop().job
		if r, waiting := f.ran[j]; waiting {
			g.res.Restarts[f.counts[j]].Short = short(g, r, g.jobs[j].GPUs)
		}
		if f.cfg.Expedite {
			f.top[j] = true
		}
		g.enqueue(j)
		changed = true
	}
	return changed
}

// fail takes node n down at t, requeueing the jobs running on it; it
// reports whether it requeued any.
func (f *failSim) fail(g *gangSim, t float64, n topology.NodeID) bool {
	if f.down[int32(n)] {
		return false
	}
	requeued := false
	for _, j := range slices.Clone(g.running.jobs) {
		if !uses(g.allocs[j], n) {
			continue
		}
		f.ran[j] = ran{alloc: g.allocs[j], tier: g.out[j].Tier}
		g.res.Restarts = append(g.res.Restarts, Restart{Job: j, At: t, Start: math.NaN(), Old: g.out[j].Tier, Spread: spread(g.c, g.allocs[j])})
		f.counts[j] = int32(len(g.res.Restarts) - 1)
		g.stopRun(t, j)
		requeued = true
		g.out[j].Failures++
		back := t + f.delay
		if f.pol != nil {
			// the controller's next cycle, or the job's begin time if
			// sooner; an expedited job may start before the controller
			// sees it
			next := math.Floor(t/f.every)*f.every + f.every
			tell := next
			switch {
			case f.cfg.AtRequeue:
				tell = t
			case !f.cfg.Expedite:
				tell = min(next, back)
			}
			heap.Push(&f.tell, endEvent{tell, j})
			if f.cfg.AtOnce {
				// the first cycle RestartMargin after the failure; told
				// (re-bound) first: step reads tell before back
				first := math.Floor((t+RestartMargin)/f.every)*f.every + f.every
				back = min(back, max(next, first))
			}
		}
		heap.Push(&f.back, endEvent{back, j})
	}
	f.down[int32(n)] = true
	if g.done < len(g.jobs) {
		g.res.Failures++ // not after the last job (the loop may run on to stale end events)
	}
	g.s.SetState(n, occupancy.StateDown)
	g.free -= g.c.Nodes[n].NumGPUs() // empty now: its GPUs were whole free
	f.repairs.push(t+f.cfg.Repair, int32(n))
	return requeued
}

// started records the restart of job j with allocation a, when a failure
// requeued it.
func (f *failSim) started(g *gangSim, t float64, j int32, a occupancy.Allocation) {
	if f == nil {
		return
	}
	delete(f.top, j)
	r, ok := f.ran[j]
	if !ok {
		return
	}
	delete(f.ran, j)
	e := &g.res.Restarts[f.counts[j]]
	e.Start, e.New = t, g.out[j].Tier
	if dom, tier := r.domain(g.c); r.tier > 0 && dom != topology.NoDomain {
		e.SameDomain = true
		for _, na := range a.Nodes {
			e.SameDomain = e.SameDomain && g.c.Nodes[na.Node].Up[tier] == dom
		}
	}
}

// domain is the domain the job ran in, of its tier (at least a node),
// and that tier; NoDomain when it held no node.
func (r ran) domain(c *topology.Cluster) (topology.DomainID, topology.Tier) {
	tier := max(r.tier, topology.TierNode)
	if len(r.alloc.Nodes) == 0 {
		return topology.NoDomain, tier
	}
	return c.Nodes[r.alloc.Nodes[0].Node].Up[tier], tier
}

// short says whether the domain requeued job r ran in has fewer whole
// free GPUs on nodes that take work than the job's gpus.
func short(g *gangSim, r ran, gpus int) bool {
	dom, _ := r.domain(g.c)
	if dom == topology.NoDomain {
		return false
	}
	d := &g.c.Domains[dom]
	free := 0
	for n := d.NodeLo; n < d.NodeHi; n++ {
		if g.s.State[n].Usable() {
			free += g.s.WholeFree(n)
		}
	}
	return free < gpus
}

// spread says whether allocation a takes only some of the GPUs of one of
// its nodes.
func spread(c *topology.Cluster, a occupancy.Allocation) bool {
	for _, na := range a.Nodes {
		if len(na.GPUs) < c.Nodes[na.Node].NumGPUs() {
			return true
		}
	}
	return false
}

// ahead says whether waiting job a comes before b in the queue: an
// expedited one before one that is not, else in submit order.
func (f *failSim) ahead(a, b int32) bool {
	if f != nil && f.top[a] != f.top[b] {
		return f.top[a]
	}
	return a < b
}

func uses(a occupancy.Allocation, n topology.NodeID) bool {
	for _, na := range a.Nodes {
		if na.Node == n {
			return true
		}
	}
	return false
}

func allocNodes(a occupancy.Allocation) []topology.NodeID {
	out := make([]topology.NodeID, len(a.Nodes))
	for i, na := range a.Nodes {
		out[i] = na.Node
	}
	return out
}
