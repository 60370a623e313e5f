package defrag

import (
	"sort"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Options tune the planner.
type Options struct {
	// Evictable says whether a running job (index into Snapshot.Jobs) may
	// be requeued. nil: every job may.
	Evictable func(job int) bool
	// MaxDomains bounds how many domains are planned for (best capacity
	// first); 0 means all.
	MaxDomains int
}

// Plan is a way to start the gang.
type Plan struct {
	Domain topology.DomainID
	// Evict lists the jobs to requeue (indices into Snapshot.Jobs), and
	// EvictGPUs the GPUs they hold.
	Evict     []int
	EvictGPUs int
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

// For plans room for request r in snapshot s. ok is false when no domain
// can hold the gang even with every evictable job gone.
func For(e *place.Engine, s *occupancy.Snapshot, r request.Request, opts Options) (best Plan, ok bool) {
	c := e.Cluster()
	tier := r.EffectiveTier()
	if !c.HasTier(tier) {
		return Plan{}, false
	}
	domains := candidateDomains(c, s, tier, opts.MaxDomains)
	for _, d := range domains {
		p, found := planDomain(e, s, r, d, opts)
		if !found {
			continue
		}
		if !ok || p.EvictGPUs < best.EvictGPUs || p.EvictGPUs == best.EvictGPUs && len(p.Evict) < len(best.Evict) {
			best, ok = p, true
		}
	}
	if ok {
		best.Moves, best.Requeued = relocate(e, s, best)
	}
	return best, ok
}

// candidateDomains lists the domains of a tier, the most free GPUs first.
func candidateDomains(c *topology.Cluster, s *occupancy.Snapshot, t topology.Tier, limit int) []topology.DomainID {
	ids := append([]topology.DomainID(nil), c.ByTier[t]...)
	free := map[topology.DomainID]int{}
	for _, d := range ids {
		dom := &c.Domains[d]
		for n := dom.NodeLo; n < dom.NodeHi; n++ {
			free[d] += s.IdleMilli(n)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return free[ids[i]] > free[ids[j]] })
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	return ids
}

// planDomain finds a minimal set of jobs to evict so r fits inside d.
func planDomain(e *place.Engine, s *occupancy.Snapshot, r request.Request, d topology.DomainID, opts Options) (Plan, bool) {
	c := e.Cluster()
	dom := &c.Domains[d]
	r.Allowed = nil
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		r.Allowed = append(r.Allowed, c.Nodes[n].Name)
	}
	r.Mode = request.Required
	work := s.Clone()
	if res := e.Place(work, r); res.Status == place.Placed {
		return Plan{Domain: d, Gang: res}, true
	}
	jobs := jobsIn(s, dom, opts)
	var evicted []int
	for _, j := range jobs {
		if err := work.Release(s.Jobs[j].Alloc); err != nil {
			continue // inconsistent job record: never evict what we cannot account for
		}
		evicted = append(evicted, j)
		if res := e.Place(work, r); res.Status == place.Placed {
			return minimise(e, work, s, r, d, evicted), true
		}
	}
	return Plan{}, false
}

// jobsIn lists the evictable jobs holding GPUs in dom, cheapest first: the
// fewest GPUs held in total per GPU freed inside the domain, then the
// fewest GPUs, then job order.
func jobsIn(s *occupancy.Snapshot, dom *topology.Domain, opts Options) []int {
	type cand struct {
		job          int
		inside, held int
	}
	var cands []cand
	for j, job := range s.Jobs {
		if opts.Evictable != nil && !opts.Evictable(j) {
			continue
		}
		in, all := 0, 0
		for _, na := range job.Alloc.Nodes {
			all += len(na.GPUs)
			if na.Node >= dom.NodeLo && na.Node < dom.NodeHi {
				in += len(na.GPUs)
			}
		}
		if in > 0 {
			cands = append(cands, cand{j, in, all})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		ra := float64(cands[a].held) / float64(cands[a].inside)
		rb := float64(cands[b].held) / float64(cands[b].inside)
		if ra != rb {
			return ra < rb
		}
		return cands[a].held < cands[b].held
	})
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = c.job
	}
	return out
}

// minimise puts evicted jobs back, newest eviction first, whenever the gang
// still fits without evicting them.
func minimise(e *place.Engine, work, s *occupancy.Snapshot, r request.Request, d topology.DomainID, evicted []int) Plan {
	keep := make([]bool, len(evicted))
	for i := len(evicted) - 1; i >= 0; i-- {
		alloc := s.Jobs[evicted[i]].Alloc
		if work.Allocate(alloc) != nil {
			continue
		}
		if res := e.Place(work, r); res.Status == place.Placed {
			keep[i] = true
			continue
		}
		_ = work.Release(alloc) // was just allocated: cannot fail
	}
	p := Plan{Domain: d, Gang: e.Place(work, r)}
	for i, j := range evicted {
		if !keep[i] {
			p.Evict = append(p.Evict, j)
			p.EvictGPUs += s.Jobs[j].Alloc.NumGPUs()
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
