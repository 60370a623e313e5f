package quota

import (
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// ReclaimOptions say what Reclaim knows of the running jobs.
type ReclaimOptions struct {
	// Holder gives snapshot job j's account and whether it runs
	// borrowing (in the borrowing QOS: only those may be taken).
	Holder func(j int) (account string, borrowing bool)
	// Cost is the work taking job j loses (defrag.CostModel); nil: the
	// GPUs it holds.
	Cost func(j int) float64
	// Domains, when not empty, are the only domains the job may start in
	// (its binding), of any tier: every plan lies inside one of them.
	Domains []topology.DomainID
	// PassedOver: the scheduler has already looked at the job and left it
	// waiting. If it fits the free GPUs all the same (they are held for an
	// older job: a backfill reservation), a plan that "fits now" would
	// leave the owner waiting below its share, so it is planned again on
	// borrowed GPUs only, not on GPUs free now.
	PassedOver bool
}

// Reclaim plans the room an entitled job's request r needs on snapshot s,
// taking back borrowed GPUs, with the victim choice of selector/defrag
// (defrag.For: the domain of r's tier whose freeing costs least, a minimal
// set of jobs there).
//
// The rules, on top of defrag.For's:
//
//  1. only borrowing jobs may be taken;
//  2. from each account, at most what it holds beyond its share
//     (Ledger.Excess): a reclaim never leaves an account below its share,
//     even when some of its borrowing jobs started while it was above it
//     and its own jobs have ended since. A job larger than its account's
//     excess is never a candidate;
//  3. when the cheapest plan takes more than that from an account (several
//     of its jobs, each within the excess alone), its dearest victim there
//     is ruled out and the plan is made again; at most one round per
//     running job, so the loop ends.
//
// A request whose tier is only preferred (leaf:preferred, the default of
// a gang) that no domain of its tier can be freed for is planned again
// over the whole cluster: the owner gets its GPUs, wider, rather than
// wait below its share, as the placement itself widens a preferred gang.
// A bound job is widened within its binding only (ReclaimOptions.Domains,
// of any tier: defrag.Options.Domains): Slurm would not start it outside,
// so there it gets no plan rather than a plan it cannot use.
//
// ok is false when no plan exists: the job waits (its share is held by
// jobs that may not be taken, or not in the shape it needs). A plan with
// nothing to evict means the job fits now.
func Reclaim(e *place.Engine, s *occupancy.Snapshot, r request.Request, l *Ledger, o ReclaimOptions) (defrag.Plan, bool) {
	plan, ok := reclaimWiden(e, s, r, l, o)
	if ok && len(plan.Evict) == 0 && o.PassedOver {
		plan, ok = reclaimWiden(e, withoutFree(s), r, l, o)
	}
	return plan, ok
}

// reclaimWiden is Reclaim at the request's tier, then, for a preferred
// tier, over the whole cluster.
func reclaimWiden(e *place.Engine, s *occupancy.Snapshot, r request.Request, l *Ledger, o ReclaimOptions) (defrag.Plan, bool) {
	plan, ok := reclaimAt(e, s, r, l, o)
	if !ok && r.Mode == request.Preferred && r.EffectiveTier() != topology.TierCluster {
		r.Tier = topology.TierCluster // within its binding (o.Domains), if any
		plan, ok = reclaimAt(e, s, r, l, o)
	}
	return plan, ok
}

// reclaimAt is Reclaim at the request's own tier.
func reclaimAt(e *place.Engine, s *occupancy.Snapshot, r request.Request, l *Ledger, o ReclaimOptions) (defrag.Plan, bool) {
	banned := map[int]bool{}
	accounts := make([]string, len(s.Jobs))
	borrowing := make([]bool, len(s.Jobs))
	for j := range s.Jobs {
		accounts[j], borrowing[j] = o.Holder(j)
	}
	cost := o.Cost
	if cost == nil {
		cost = func(j int) float64 { return float64(s.Jobs[j].Alloc.NumGPUs()) }
	}
	evictable := func(j int) bool {
		return borrowing[j] && !banned[j] && s.Jobs[j].Alloc.NumGPUs() <= l.Excess(accounts[j])
	}
	for round := 0; round <= len(s.Jobs); round++ {
		plan, ok := defrag.For(e, s, r, defrag.Options{Evictable: evictable, Cost: cost, Domains: o.Domains})
		if !ok {
			return plan, false
		}
		over := overTaken(s, plan.Evict, accounts, l)
		if len(over) == 0 {
			return plan, true
		}
		for _, a := range over {
			banned[dearest(s, plan.Evict, accounts, a, cost)] = true
		}
	}
	return defrag.Plan{}, false
}

// overTaken lists the accounts a plan takes more from than they hold
// beyond their share, in the order of their first victim.
func overTaken(s *occupancy.Snapshot, evict []int, accounts []string, l *Ledger) []string {
	taken := map[string]int{}
	var order []string
	for _, j := range evict {
		a := accounts[j]
		if _, seen := taken[a]; !seen {
			order = append(order, a)
		}
		taken[a] += s.Jobs[j].Alloc.NumGPUs()
	}
	var over []string
	for _, a := range order {
		if taken[a] > l.Excess(a) {
			over = append(over, a)
		}
	}
	return over
}

// dearest is the victim of account a that costs most (ties: the most
// GPUs, then the last in the plan).
func dearest(s *occupancy.Snapshot, evict []int, accounts []string, a string, cost func(int) float64) int {
	best := -1
	for _, j := range evict {
		if accounts[j] != a {
			continue
		}
		if best < 0 || cost(j) > cost(best) || cost(j) == cost(best) && s.Jobs[j].Alloc.NumGPUs() >= s.Jobs[best].Alloc.NumGPUs() {
			best = j
		}
	}
	return best
}

// withoutFree is a copy of s whose whole free GPUs are taken (by no job:
// nothing can free them), so that a plan uses only the GPUs its victims
// free. Partly shared GPUs cannot hold a whole-GPU gang and stay as they
// are.
func withoutFree(s *occupancy.Snapshot) *occupancy.Snapshot {
	c := s.Clone()
	var held occupancy.Allocation
	for n := range c.Cluster.Nodes {
		id := topology.NodeID(n)
		if c.WholeFree(id) == 0 {
			continue
		}
		na := occupancy.NodeAlloc{Node: id, Milli: occupancy.WholeGPU}
		for i, free := range c.NodeFree(id) {
			if free == occupancy.WholeGPU {
				na.GPUs = append(na.GPUs, i)
			}
		}
		held.Nodes = append(held.Nodes, na)
	}
	if err := c.Allocate(held); err != nil {
		return s // cannot happen: every GPU taken is whole and free
	}
	return c
}
