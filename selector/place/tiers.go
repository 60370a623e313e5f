package place

import (
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// tiers lists the tiers to try, tightest first: the single-node tiers
// (nvlink, node) for a job that can fit one node, then the gang tiers
// (block, leaf, spine, cluster) for one that can span nodes, up to the
// requested tier, or up to the cluster for a Preferred request. A request
// for tier nvlink may use an NVLink block: there the NVLink domain spans
// nodes.
func (p *plan) tiers() []topology.Tier {
	c, r := p.e.c, p.req
	limit := r.EffectiveTier()
	if r.Mode == request.Preferred {
		limit = topology.TierCluster
	}
	var out []topology.Tier
	if r.Nodes <= 1 && r.GPUs <= p.e.maxNodeGPUs {
		// No island can hold more GPUs than the largest one: when the
		// node tier may be tried, skip the island scan that cannot succeed.
		if r.GPUs <= p.e.maxIsland || limit < topology.TierNode {
			out = append(out, topology.TierNVLink)
		}
		out = append(out, topology.TierNode)
	}
	if r.Nodes != 1 {
		for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
			if c.HasTier(t) {
				out = append(out, t)
			}
		}
	}
	kept := out[:0]
	for _, t := range out {
		if t <= limit || t == topology.TierBlock && p.nvlinkBlocksOnly() {
			kept = append(kept, t)
		}
	}
	return kept
}

// nvlinkBlocksOnly is true when the request's tier is nvlink and the
// cluster has NVLink blocks: gangs may then use a block, and only blocks.
func (p *plan) nvlinkBlocksOnly() bool {
	return p.req.EffectiveTier() == topology.TierNVLink && p.e.hasNVLinkBlocks
}

// tryTier finds the candidates of tier t over all model passes and returns
// the best and the runners-up (best first), or nil when none fits. Only the
// best MaxCandidates are kept while scanning, so a tier of thousands of
// nodes costs a comparison per node, not a sort.
func (p *plan) tryTier(t topology.Tier) (*Candidate, []Candidate) {
	p.top = p.top[:0]
	for _, ms := range p.passes {
		switch t {
		case topology.TierNVLink, topology.TierNode:
			p.singleNode(t, ms)
		default:
			p.gangs(t, ms)
		}
	}
	if len(p.top) == 0 {
		return nil, nil
	}
	if t == topology.TierNVLink || t == topology.TierNode {
		p.compareLinks(p.top)
	}
	best := p.top[0]
	p.won = best.pass
	return &best, p.top[1:]
}

// wouldKeep reports whether a candidate with this score would enter the
// best MaxCandidates (offer's test, without building the candidate).
func (p *plan) wouldKeep(sc *Score) bool {
	k := p.e.opts.MaxCandidates
	return len(p.top) < k || sc.Better(&p.top[k-1].Score)
}

// offer keeps cand if it is among the best MaxCandidates seen in this tier.
// nodes is copied only when the candidate is kept.
func (p *plan) offer(cand Candidate) {
	k := p.e.opts.MaxCandidates
	if len(p.top) == k && !cand.Score.Better(&p.top[k-1].Score) {
		return
	}
	cand.Nodes = append([]NodeShare(nil), cand.Nodes...)
	if len(p.top) < k {
		p.top = append(p.top, cand)
	} else {
		p.top[k-1] = cand
	}
	for j := len(p.top) - 1; j > 0 && p.top[j].Score.Better(&p.top[j-1].Score); j-- {
		p.top[j], p.top[j-1] = p.top[j-1], p.top[j]
	}
}
