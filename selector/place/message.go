package place

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// noFitMessage says why a valid request does not fit now.
func (p *plan) noFitMessage() string {
	r := p.req
	t := r.EffectiveTier()
	what := p.gangWords()
	if p.closest.domain != topology.NoDomain && t > topology.TierNode {
		return fmt.Sprintf("no %s has room for %s now (closest: %s with %d usable GPUs)",
			t, what, p.e.c.Domains[p.closest.domain].Name, p.closest.gpus)
	}
	if r.Nodes <= 1 && r.GPUs <= p.e.maxNodeGPUs && t <= topology.TierNode {
		return fmt.Sprintf("no node has %s free in one %s now", what, t)
	}
	return fmt.Sprintf("no room for %s %s now", what, within(t))
}

// gangWords describes the gang for messages: "32 GPUs (h100) as 4x8".
func (p *plan) gangWords() string {
	r := p.req
	s := fmt.Sprintf("%d GPUs", r.GPUs)
	if r.GPUs == 1 {
		s = "1 GPU"
	}
	if r.Share() < 1000 {
		s = fmt.Sprintf("a %d milli-GPU share", r.Share())
	}
	if len(r.Models) > 0 {
		s += fmt.Sprintf(" of model %v", r.Models)
	}
	if g := p.perNode(); g > 0 && r.Nodes > 1 {
		s += fmt.Sprintf(" as %dx%d", r.GPUs/g, g)
	} else if r.Nodes > 1 {
		s += fmt.Sprintf(" on %d nodes", r.Nodes)
	}
	if r.Slice > 1 {
		s += fmt.Sprintf(" in slices of %d", r.Slice)
	}
	return s
}

// impossibleMessage says why a request can never fit and what would. ep is
// the plan run against the empty cluster.
func (e *Engine) impossibleMessage(r *request.Request, ep *plan) string {
	t := neverTier(r)
	what := ep.gangWords()
	filtered := 0
	for _, v := range ep.eligible {
		if !v {
			filtered++
		}
	}
	if filtered == len(e.c.Nodes) {
		return fmt.Sprintf("no node can take %s at all: %s", what, rejectSummary(ep.res))
	}
	if msg := e.limitMessage(ep, t, what); msg != "" {
		return msg
	}
	best, bestDomain := 0, topology.NoDomain
	switch {
	case ep.closest.domain != topology.NoDomain:
		best, bestDomain = ep.closest.gpus, ep.closest.domain
	case t <= topology.TierNode || r.Nodes == 1:
		best, bestDomain = ep.largestSingle(t)
	}
	if bestDomain == topology.NoDomain {
		return fmt.Sprintf("%s can never fit %s", what, e.where(t))
	}
	hint := fmt.Sprintf("ask for at most %d GPUs", best)
	if wider := e.fittingTier(*r); wider != 0 {
		hint = fmt.Sprintf("use --gang-topology=%s, or ask for at most %d GPUs", wider, best)
	}
	if t == topology.TierCluster {
		return fmt.Sprintf("%s can never fit in cluster %s: it has %d usable; %s", what, e.c.Name, best, hint)
	}
	return fmt.Sprintf("%s can never fit %s: the largest (%s) holds %d; %s",
		what, within(t), e.c.Domains[bestDomain].Name, best, hint)
}

// neverTier is the tier whose domains the "can never fit" answer
// measures: the requested one, or the node for a one-node request.
func neverTier(r *request.Request) topology.Tier {
	t := r.EffectiveTier()
	if r.Nodes == 1 && t > topology.TierNode {
		t = topology.TierNode // one node is the binding constraint
	}
	return t
}

// largestSingle is the most GPUs one node or NVLink island can give this
// request on the empty cluster.
func (p *plan) largestSingle(t topology.Tier) (int, topology.DomainID) {
	c := p.e.c
	best, where := 0, topology.NoDomain
	for i := range c.Nodes {
		n := topology.NodeID(i)
		for _, ms := range p.passes {
			u := p.usable(n, ms)
			dom := c.Nodes[n].Up[topology.TierNode]
			if t == topology.TierNVLink {
				u, dom = p.largestIsland(n, ms)
			}
			if u > best {
				best, where = u, dom
			}
		}
	}
	return best, where
}

func (p *plan) largestIsland(n topology.NodeID, ms topology.ModelSet) (int, topology.DomainID) {
	c := p.e.c
	best, where := 0, topology.NoDomain
	for _, isl := range c.Nodes[n].Islands {
		k := 0
		for _, g := range c.Domains[isl].IslandGPUs {
			if ms.Has(c.GPUs[g].Model) {
				k++
			}
		}
		if k > best {
			best, where = k, isl
		}
	}
	return best, where
}

// fittingTier is the tightest tier wider than the request's at which it
// would fit the empty cluster, or 0 if none.
func (e *Engine) fittingTier(r request.Request) topology.Tier {
	for w := r.EffectiveTier() + 1; w <= topology.TierCluster; w++ {
		if !e.c.HasTier(w) {
			continue
		}
		r.Tier, r.Mode = w, request.Required
		p, err := e.resolve(e.empty, &r)
		if err != nil {
			continue
		}
		p.ignoreState = true
		e.startCall()
		if p.run().Status == Placed {
			return w
		}
	}
	return 0
}

func rejectSummary(r *Result) string {
	s := ""
	for i, rc := range r.RejectedSorted() {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%d %s", rc.Count, rc.Reason)
	}
	return s
}

// within words "inside one domain of tier t" for messages: "in one leaf",
// or "in the cluster" for tier any.
func within(t topology.Tier) string {
	if t == topology.TierCluster {
		return "in the cluster"
	}
	return "in one " + t.String()
}
