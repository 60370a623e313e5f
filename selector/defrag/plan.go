package defrag

import (
	"slices"
	"sort"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Options say which running jobs the planner may take and what taking one
// costs. They are the whole of the caller's policy: defragmentation
// (gangtopo.yaml's preemptible partitions, QOS and accounts, the requeue
// window), Slurm's preemption rule (Preemption.Frees), a quota's borrowed
// jobs; the planner itself knows none of them.
type Options struct {
	// Evictable says whether a running job (index into Snapshot.Jobs) may
	// be taken. nil: every job may.
	Evictable func(job int) bool
	// Cost is what taking a job costs, >= 0, in any unit the caller
	// compares plans by (CostModel.Cost: weighted GPU-hours of work lost).
	// nil: the GPUs the job holds.
	Cost func(job int) float64
	// Domains, when not empty, bound the gang (a gang bound to some
	// leaves, or to some nodes, can only start inside one of them),
	// whatever their tier: one of the request's tier is planned for as it
	// is; a wider one through each domain of the request's tier inside
	// it; a narrower one through the domain of the request's tier that
	// holds it, on its nodes only. No plan lies outside them.
	Domains []topology.DomainID
	// MaxDomains bounds how many domains are planned for (most free GPUs
	// first); 0 means all.
	MaxDomains int
}

// Plan is a way to start the gang.
type Plan struct {
	Domain topology.DomainID
	// Evict lists the jobs to take (indices into Snapshot.Jobs), EvictGPUs
	// the GPUs they hold and Cost the sum of Options.Cost over them.
	Evict     []int
	EvictGPUs int
	Cost      float64
	// Gang is where the gang goes once they are gone.
	Gang place.Result
	// Moves are evicted jobs that fit elsewhere at once; Requeued the rest.
	Moves    []Move
	Requeued []int
}

// Move is an evicted job that can restart elsewhere right away.
type Move struct {
	Job   int
	Alloc occupancy.Allocation
}

// For plans room for request r in snapshot s: the domain of r's tier
// whose freeing costs least, and the jobs to take there. ok is false when
// no allowed domain can hold the gang even with every evictable job in it
// gone. A gang that fits now gets a plan with nothing to evict.
//
// The plans compared: the cheapest (Options.Cost summed), then the one
// evicting the fewest GPUs, then the fewest jobs, then the first domain in
// the planner's order (most free GPUs first).
func For(e *place.Engine, s *occupancy.Snapshot, r request.Request, opts Options) (best Plan, ok bool) {
	c := e.Cluster()
	tier := r.EffectiveTier()
	if !c.HasTier(tier) {
		return Plan{}, false
	}
	cost := opts.costOf(s)
	for _, sp := range candidateSpans(c, s, tier, opts) {
		p, found := planDomain(e, s, r, sp, opts, cost)
		if found && (!ok || better(p, best)) {
			best, ok = p, true
		}
	}
	if ok {
		best.Moves, best.Requeued = relocate(e, s, best)
	}
	return best, ok
}

// better orders plans: cheaper, then fewer GPUs, then fewer jobs.
func better(a, b Plan) bool {
	switch {
	case a.Cost != b.Cost:
		return a.Cost < b.Cost
	case a.EvictGPUs != b.EvictGPUs:
		return a.EvictGPUs < b.EvictGPUs
	}
	return len(a.Evict) < len(b.Evict)
}

// costOf is Options.Cost, or the GPUs a job holds.
func (o Options) costOf(s *occupancy.Snapshot) func(int) float64 {
	if o.Cost != nil {
		return o.Cost
	}
	return func(j int) float64 { return float64(s.Jobs[j].Alloc.NumGPUs()) }
}

// span is a domain planned for and the nodes of it the gang may use,
// [lo, hi): the whole domain, or the nodes of a narrower domain the gang
// is bound to.
type span struct {
	domain topology.DomainID
	lo, hi topology.NodeID
	free   int // idle milli-GPUs on the nodes, for the order
}

// candidateSpans lists the allowed domains of a tier (Options.Domains),
// the most free GPUs first.
func candidateSpans(c *topology.Cluster, s *occupancy.Snapshot, t topology.Tier, opts Options) []span {
	var spans []span
	add := func(d topology.DomainID, lo, hi topology.NodeID) {
		sp := span{domain: d, lo: lo, hi: hi}
		for n := lo; n < hi; n++ {
			sp.free += s.IdleMilli(n)
		}
		if !slices.Contains(spans, sp) {
			spans = append(spans, sp)
		}
	}
	for _, d := range c.ByTier[t] {
		dom := &c.Domains[d]
		if len(opts.Domains) == 0 {
			add(d, dom.NodeLo, dom.NodeHi)
		}
		for _, b := range opts.Domains {
			bound := &c.Domains[b]
			switch {
			case bound.Tier == t && b == d, bound.Tier > t && inside(dom, bound):
				add(d, dom.NodeLo, dom.NodeHi)
			case bound.Tier < t && inside(bound, dom):
				add(d, bound.NodeLo, bound.NodeHi)
			}
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].free > spans[j].free })
	if opts.MaxDomains > 0 && len(spans) > opts.MaxDomains {
		spans = spans[:opts.MaxDomains]
	}
	return spans
}

// inside says whether domain a's nodes are all domain b's.
func inside(a, b *topology.Domain) bool { return b.NodeLo <= a.NodeLo && a.NodeHi <= b.NodeHi }

// planDomain finds a minimal set of jobs to evict so r fits inside the
// span's nodes. The engine is asked only once the GPUs free there could
// hold the gang: before that no Place call can succeed.
func planDomain(e *place.Engine, s *occupancy.Snapshot, r request.Request, sp span, opts Options, cost func(int) float64) (Plan, bool) {
	c := e.Cluster()
	d := sp.domain
	own := r.Allowed // the request's own node list, if any, still holds
	r.Allowed = nil
	freeMilli := 0
	for n := sp.lo; n < sp.hi; n++ {
		name := c.Nodes[n].Name
		if len(own) > 0 && !slices.Contains(own, name) {
			continue
		}
		r.Allowed = append(r.Allowed, name)
		if s.State[n].Usable() {
			freeMilli += s.IdleMilli(n)
		}
	}
	if len(r.Allowed) == 0 {
		return Plan{}, false
	}
	r.Mode = request.Required
	need := r.GPUs * r.Share()
	work := s.Clone()
	if freeMilli >= need {
		if res := e.Place(work, r); res.Status == place.Placed {
			return Plan{Domain: d, Gang: res}, true
		}
	}
	var evicted []int
	for _, cd := range jobsIn(s, sp, opts, cost) {
		if err := work.Release(s.Jobs[cd.job].Alloc); err != nil {
			continue // inconsistent job record: never evict what we cannot account for
		}
		evicted = append(evicted, cd.job)
		freeMilli += cd.insideMilli
		if freeMilli < need {
			continue
		}
		if res := e.Place(work, r); res.Status == place.Placed {
			return minimise(e, work, s, r, d, evicted, cost), true
		}
	}
	return Plan{}, false
}

// candidate is an evictable job holding GPUs in the domain being planned.
type candidate struct {
	job          int
	inside, held int // GPUs inside the domain, GPUs in all
	insideMilli  int // their capacity on usable nodes
	cost         float64
}

// jobsIn lists the evictable jobs holding GPUs in the span's nodes,
// cheapest first: the least cost per GPU freed there, then the fewest GPUs
// held, then job order.
func jobsIn(s *occupancy.Snapshot, sp span, opts Options, cost func(int) float64) []candidate {
	var cands []candidate
	for j, job := range s.Jobs {
		if opts.Evictable != nil && !opts.Evictable(j) {
			continue
		}
		cd := candidate{job: j}
		for _, na := range job.Alloc.Nodes {
			cd.held += len(na.GPUs)
			if na.Node >= sp.lo && na.Node < sp.hi {
				cd.inside += len(na.GPUs)
				if s.State[na.Node].Usable() {
					cd.insideMilli += len(na.GPUs) * int(na.Milli)
				}
			}
		}
		if cd.inside > 0 {
			cd.cost = cost(j)
			cands = append(cands, cd)
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		ra := cands[a].cost / float64(cands[a].inside)
		rb := cands[b].cost / float64(cands[b].inside)
		if ra != rb {
			return ra < rb
		}
		return cands[a].held < cands[b].held
	})
	return cands
}

// minimise puts evicted jobs back, the most expensive first, whenever the
// gang still fits without evicting them: the set left is minimal (no job
// in it can stay), not just what the greedy pass took.
func minimise(e *place.Engine, work, s *occupancy.Snapshot, r request.Request, d topology.DomainID, evicted []int, cost func(int) float64) Plan {
	order := append([]int(nil), evicted...)
	sort.SliceStable(order, func(a, b int) bool { return cost(order[a]) > cost(order[b]) })
	keep := map[int]bool{}
	for _, j := range order {
		alloc := s.Jobs[j].Alloc
		if work.Allocate(alloc) != nil {
			continue
		}
		if res := e.Place(work, r); res.Status == place.Placed {
			keep[j] = true
			continue
		}
		_ = work.Release(alloc) // was just allocated: cannot fail
	}
	p := Plan{Domain: d, Gang: e.Place(work, r)}
	for _, j := range evicted {
		if !keep[j] {
			p.Evict = append(p.Evict, j)
			p.EvictGPUs += s.Jobs[j].Alloc.NumGPUs()
			p.Cost += cost(j)
		}
	}
	return p
}

// relocate tries to restart each evicted job elsewhere, largest first, on
// the cluster as it would be with the gang placed.
func relocate(e *place.Engine, s *occupancy.Snapshot, p Plan) ([]Move, []int) {
	work := s.Clone()
	for _, j := range p.Evict {
		_ = work.Release(s.Jobs[j].Alloc) // the planner released them before
	}
	if work.Allocate(p.Gang.Alloc) != nil {
		return nil, p.Evict
	}
	order := append([]int(nil), p.Evict...)
	sort.SliceStable(order, func(a, b int) bool { return s.Jobs[order[a]].Alloc.NumGPUs() > s.Jobs[order[b]].Alloc.NumGPUs() })
	var moves []Move
	var requeued []int
	for _, j := range order {
		res := e.Place(work, requestOf(s, j))
		if res.Status == place.Placed && work.Allocate(res.Alloc) == nil {
			moves = append(moves, Move{Job: j, Alloc: res.Alloc})
			continue
		}
		requeued = append(requeued, j)
	}
	return moves, requeued
}

// requestOf rebuilds a running job's request from what it holds: the same
// GPU count, share, CPUs and memory, and its recorded gang option.
func requestOf(s *occupancy.Snapshot, j int) request.Request {
	job := &s.Jobs[j]
	r := request.Request{JobID: job.ID}
	for _, na := range job.Alloc.Nodes {
		r.GPUs += len(na.GPUs)
		r.CPUMilli += int64(na.CPUMilli)
		r.MemMiB += na.MemMiB
		if na.Milli < occupancy.WholeGPU {
			r.Milli = int(na.Milli)
		}
	}
	if o, err := request.ParseOption(job.Request); err == nil {
		o.Apply(&r)
	}
	return r
}
