package queue

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Replay runs the jobs through policy p on cluster c, with the queue of
// Slurm's sched/backfill as modelled in backfill.go, and returns what
// happened to every job. It fails on invalid input and when the policy
// breaks its contract (an allocation that does not fit, or uses a node
// reserved for another job).
//
// The loop takes the next event time t (the earliest job end or submit);
// ends at t come first, releasing their GPUs, then submits at t join the
// queue, then one scheduling pass runs (see schedule).
func Replay(c *topology.Cluster, jobs []Job, p Policy, cfg Config) (*Result, error) {
	cfg = cfg.Defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkJobs(jobs); err != nil {
		return nil, err
	}
	g := newGangSim(c, jobs, p, cfg)
	return g.run()
}

// gangSim is the state of one replay of an all-or-nothing policy.
type gangSim struct {
	c     *topology.Cluster
	jobs  []Job
	pol   Policy
	cfg   Config
	s     *occupancy.Snapshot
	empty *occupancy.Snapshot
	res   *Result
	out   []Outcome

	allocs []occupancy.Allocation // by job, while it runs
	expEnd []float64              // by job: start + time limit
	queue  []int32                // waiting jobs, oldest first
	ends   endHeap                // actual ends of running jobs
	plan   planned                // running jobs by expected end
	free   int                    // whole free GPUs
	resv   reservation
	feas   *feasibility
	reqs   map[reqKey]*request.Request // shared by jobs that ask alike
	never  map[reqKey]bool             // does not fit the empty cluster
	// mixed: some job asks for its own node count or option, so fit is
	// not a function of the GPU count alone
	mixed  bool
	undo   []int32 // scratch for reserve
	most   int     // GPUs of the largest node
	slow   slower  // the slowdown model
	honors bool    // the policy keeps Required gangs inside their tier
	// jobReqs, for a Deciding policy, is each job's own request (nil
	// otherwise: requests are shared by size), and rebind models the
	// controller that re-decides stale bindings.
	jobReqs []*request.Request
	rebind  *rebinder
	// dfg models the controller's defragmentation policy (nil: off),
	// quota the dynamic quotas or hard limits (nil: none); both plan over
	// the running jobs.
	dfg     *defragger
	quota   *quotaSim
	fails   *failSim
	running runningSet
	now     float64 // the time of the pass in progress
	// clock, with Config.Timing, says when passes run; passBy names the
	// pass in progress (Outcome.By).
	clock  *clock
	passBy string
	// cancels are the jobs with a Cancel time, by that time.
	cancels endHeap
	// onPlan, when set (tests), sees every planned reservation.
	onPlan func(job int32, at float64)
	done   int
	err    error
}

func newGangSim(c *topology.Cluster, jobs []Job, p Policy, cfg Config) *gangSim {
	g := &gangSim{c: c, jobs: jobs, pol: p, cfg: cfg, s: occupancy.New(c), empty: occupancy.New(c),
		res: newResult(p.Name(), c, jobs), allocs: make([]occupancy.Allocation, len(jobs)),
		expEnd: make([]float64, len(jobs)), free: c.NumGPUs(), feas: newFeasibility(c),
		reqs: map[reqKey]*request.Request{}, never: map[reqKey]bool{}, running: newRunningSet()}
	g.out = g.res.Outcomes
	g.most = mostGPUs(c)
	g.slow = newSlower(c, &g.cfg)
	if th, ok := p.(TierHonoring); ok {
		g.honors = th.HonorsTier()
	}
	g.dfg = newDefragger(c, cfg.Defrag)
	g.fails = newFailSim(cfg.Failures, p)
	g.quota = newQuotaSim(c, jobs, cfg.Quota)
	if g.quota != nil {
		g.res.OwnerBound, g.res.Shares = g.quota.cfg.OwnerBound(), g.quota.cfg.Shares
	}
	g.clock = newClock(cfg.Timing)
	for i := range jobs {
		g.mixed = g.mixed || jobs[i].Nodes > 0 || jobs[i].Option != nil
	}
	for i := range jobs {
		if jobs[i].Cancel > 0 {
			g.cancels.push(jobs[i].Cancel, int32(i))
		}
	}
	if g.rebind = newRebinder(p); g.rebind != nil {
		g.jobReqs = make([]*request.Request, len(jobs))
	}
	return g
}

func (g *gangSim) run() (*Result, error) {
	next, n := 0, len(g.jobs)
	for g.err == nil && (next < n || len(g.ends) > 0 || g.fails.busy(len(g.queue) > 0) || !math.IsInf(g.rebind.nextEvent(), 1) || (!math.IsInf(g.dfg.nextEvent(), 1) || !math.IsInf(g.quota.nextEvent(), 1) || !math.IsInf(g.clock.nextEvent(true), 1)) && len(g.queue) > 0) {
		t := math.Inf(1)
		if next < n {
			t = g.jobs[next].Submit
		}
		if at, ok := g.ends.next(); ok && at <= t {
			t = at
		}
		if at, ok := g.cancels.next(); ok && len(g.queue) > 0 {
			t = min(t, at)
		}
		tick, dtick, qtick := g.rebind.nextEvent(), g.dfg.nextEvent(), g.quota.nextEvent()
		t = min(t, tick, dtick, qtick, g.clock.nextEvent(len(g.queue) > 0), g.fails.nextEvent(len(g.queue) > 0))
		released := g.fails.step(g, t)
		if tick == t {
			g.rebind.cycle(g, t)
			released = true // a full pass: bindings changed
		}
		if dtick == t && g.dfg.cycle(g, t) {
			released = true // jobs requeued and a gang started
		}
		if qtick == t && g.quota.cycle(g, t) {
			released = true // borrowed jobs requeued and owners' jobs started
		}
		if g.endJobs(t) {
			released = true
		}
		if g.cancelWaiting(t) {
			released = true
		}
		firstNew, pendingBefore := len(g.queue), len(g.queue) > 0
		for ; next < n && g.jobs[next].Submit == t; next++ {
			g.admit(int32(next))
		}
		if g.clock != nil {
			g.timedPass(t, released, firstNew, pendingBefore)
		} else {
			g.schedule(t, released, firstNew)
		}
		g.quota.book(t)
	}
	if g.err != nil {
		return nil, g.err
	}
	if len(g.queue) > 0 {
		j := &g.jobs[g.queue[0]]
		return nil, fmt.Errorf("policy %s never placed %s (%d GPUs), which fits the empty cluster", g.pol.Name(), j.Name, j.GPUs)
	}
	g.progress()
	return g.res, nil
}

// endJobs ends the jobs whose end is t and reports whether any did. An
// end event of a run that is no longer the job's (requeued since), or of
// a job already ended (two runs both capped at its cancellation), is
// passed over.
func (g *gangSim) endJobs(t float64) bool {
	ended := false
	for at, ok := g.ends.next(); ok && at == t; at, ok = g.ends.next() {
		e := g.ends.pop()
		o := &g.out[e.job]
		if _, running := g.running.pos[e.job]; !running || o.End != e.at || math.IsNaN(o.Start) || len(g.allocs[e.job].Nodes) == 0 {
			// requeued since: this end is not its end any more; or a job
			// requeued at the instant it started (a quota reclaim's delayed
			// start meeting a defragmentation plan) and started again with
			// the same end, whose first end event has finished it
			continue
		}
		g.finish(e.job)
		ended = true
	}
	return ended
}

// request returns the (shared, read-only) request of a job of gpus GPUs,
// or, for a Deciding policy, the job's own.
func (g *gangSim) request(j int32) *request.Request {
	if g.jobReqs != nil {
		if g.jobReqs[j] == nil {
			v := g.cfg.Request(&g.jobs[j])
			g.jobReqs[j] = &v
		}
		return g.jobReqs[j]
	}
	k := keyOf(&g.jobs[j])
	r, ok := g.reqs[k]
	if !ok {
		v := g.cfg.Request(&Job{GPUs: k.gpus, Nodes: k.nodes, Option: g.jobs[j].Option})
		r = &v
		g.reqs[k] = r
	}
	return r
}

// admit queues a submitted job, or rejects it when it does not fit even
// the empty cluster (Slurm refuses such a job at submission).
func (g *gangSim) admit(j int32) {
	k := keyOf(&g.jobs[j])
	never, ok := g.never[k]
	if !ok {
		g.res.PlaceCalls++
		_, fits := g.pol.Place(g.empty, g.request(j))
		never = !fits
		g.never[k] = never
	}
	if never || g.quota.refuses(g, j) {
		g.out[j].Rejected = true
		g.jobDone()
		return
	}
	if g.rebind != nil {
		g.rebind.pol.Submit(g.s, g.request(j))
	}
	g.queue = append(g.queue, j)
	g.dfg.admitted(g, j)
	g.quota.admitted(g, j)
}

// hopeless reports that Place cannot succeed for job j now, by counts
// that cost far less than the call: a one-node job needs a node with its
// GPUs free (any policy), and a Required tier needs a domain of the tier
// with them (a policy that honours tiers). counted says the feasibility
// counts are already up to date.
func (g *gangSim) hopeless(j int32, counted bool) bool {
	gpus := g.jobs[j].GPUs
	if g.request(j).Nodes == 1 && g.largestFree() < gpus {
		return true
	}
	tier, ok := g.requiredTier(j)
	if !ok {
		return false
	}
	if !counted {
		g.feas.fill(g.s)
	}
	return !g.feas.within(tier, gpus)
}

// largestFree is the most whole free GPUs on one usable node.
func (g *gangSim) largestFree() int {
	most := 0
	for i := range g.c.Nodes {
		if n := topology.NodeID(i); g.s.State[n].Usable() {
			most = max(most, g.s.WholeFree(n))
		}
	}
	return most
}

// requiredTier is the tier job j must fit in, when the policy honours it
// and it is tighter than the whole cluster.
func (g *gangSim) requiredTier(j int32) (topology.Tier, bool) {
	r := g.request(j)
	if !g.honors || r.Mode != request.Required || r.EffectiveTier() == topology.TierCluster {
		return 0, false
	}
	return r.EffectiveTier(), true
}

// limitOn is job j's time limit if placed with allocation a: its run
// time there (duration x slowdown) times LimitFactor.
func (g *gangSim) limitOn(j int32, a occupancy.Allocation) float64 {
	return g.limitWith(j, g.slowdown(j, a))
}

// limitWith is job j's time limit at slowdown f: its own (Job.Limit), else
// its run time times LimitFactor.
func (g *gangSim) limitWith(j int32, f float64) float64 {
	if l := g.jobs[j].Limit; l > 0 {
		return l
	}
	return g.jobs[j].Duration * f * g.cfg.LimitFactor
}

// slowdown is the slowdown of job j with allocation a.
func (g *gangSim) slowdown(j int32, a occupancy.Allocation) float64 {
	f, _, _ := g.slow.factor(&g.jobs[j], a)
	return f
}

// start records that job j starts at t with allocation a.
func (g *gangSim) start(t float64, j int32, a occupancy.Allocation, feasible topology.Tier) {
	job := &g.jobs[j]
	f, tier, nodes := g.slow.factor(job, a)
	o := &g.out[j]
	o.Start, o.End, o.By = t, t+job.runTime(f), g.passBy
	if job.Cancel > t {
		o.End = min(o.End, job.Cancel)
	}
	o.Tier, o.Nodes, o.Slowdown, o.Feasible = tier, nodes, f, feasible
	if g.cfg.RecordUse {
		o.Used = usedBy(a)
	}
	g.allocs[j] = a
	g.free -= job.GPUs
	g.ends.push(o.End, j)
	g.expEnd[j] = t + g.limitWith(j, f)
	g.plan.insert(g.expEnd[j], j)
	g.running.add(j)
	g.quota.started(g, j)
	g.fails.started(g, t, j, a)
}

// finish releases an ended job's GPUs.
func (g *gangSim) finish(j int32) {
	if err := g.s.Release(g.allocs[j]); err != nil {
		g.fail(fmt.Errorf("releasing %s: %v", g.jobs[j].Name, err))
		return
	}
	g.free += g.jobs[j].GPUs
	g.plan.remove(g.expEnd[j], j)
	g.running.remove(j)
	g.quota.stopped(g, j, false)
	g.allocs[j] = occupancy.Allocation{}
	g.jobDone()
}

func (g *gangSim) jobDone() {
	g.done++
	if g.done%4096 == 0 {
		g.progress()
	}
}

func (g *gangSim) progress() {
	if g.cfg.Progress != nil {
		g.cfg.Progress(g.done, len(g.jobs))
	}
}

func (g *gangSim) fail(err error) {
	if g.err == nil {
		g.err = fmt.Errorf("replay of policy %s: %w", g.pol.Name(), err)
	}
}

// checkAlloc verifies that a policy's allocation is a whole gang of the
// job's size on whole GPUs, and fits.
func (g *gangSim) checkAlloc(j int32, a occupancy.Allocation) error {
	if n := a.NumGPUs(); n != g.jobs[j].GPUs {
		return fmt.Errorf("%s asked for %d GPUs and got %d", g.jobs[j].Name, g.jobs[j].GPUs, n)
	}
	for _, na := range a.Nodes {
		if na.Milli != occupancy.WholeGPU {
			return fmt.Errorf("%s got a %d milli-GPU share, not whole GPUs", g.jobs[j].Name, na.Milli)
		}
	}
	return g.s.Fits(a)
}

// enqueue puts waiting job j back in the queue at its place: expedited
// requeues first (failures.go), then submit order.
func (g *gangSim) enqueue(j int32) {
	at := sort.Search(len(g.queue), func(i int) bool { return g.fails.ahead(j, g.queue[i]) })
	g.queue = slices.Insert(g.queue, at, j)
}
