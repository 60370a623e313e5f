package place

import (
	"github.com/gangtopo/gangtopo/selector/intranode"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// singleNode adds one candidate per node that can hold the whole job in one
// domain of tier t: an NVLink island (t == TierNVLink) or the node
// (t == TierNode). Nodes are scored by the fragmentation the job adds there.
func (p *plan) singleNode(t topology.Tier, ms topology.ModelSet) {
	c := p.e.c
	var one [1]NodeShare
	g := p.req.GPUs
	countReasons := t == topology.TierNVLink && ms == p.passes[0]
	for i := range c.Nodes {
		n := topology.NodeID(i)
		if !p.eligible[n] {
			continue
		}
		u := p.usable(n, ms)
		if u < g {
			if countReasons {
				p.rejected.add(p.whyNot(n, ms))
			}
			continue
		}
		dom := c.Nodes[n].Up[topology.TierNode]
		if t == topology.TierNVLink {
			var ok bool
			if dom, ok = p.islandFor(n, ms); !ok {
				continue
			}
		}
		one[0] = NodeShare{n, g}
		p.offer(Candidate{Domain: dom, Tier: t, Nodes: one[:], Score: p.scoreNode(n, g, u), pass: ms})
	}
}

// islandFor finds an NVLink island of node n with room for the whole job.
// A GPU without NVLink is an island of one, so a 1-GPU job always has one.
func (p *plan) islandFor(n topology.NodeID, ms topology.ModelSet) (topology.DomainID, bool) {
	c := p.e.c
	node := &c.Nodes[n]
	if len(node.Islands) == 1 {
		return node.Islands[0], true
	}
	free := p.s.NodeFree(n)
	for _, isl := range node.Islands {
		k := 0
		for _, gid := range c.Domains[isl].IslandGPUs {
			if free[gid-node.GPULo] >= p.share && ms.Has(c.GPUs[gid].Model) {
				k++
			}
		}
		if p.slice > 1 {
			k = k / p.slice * p.slice
		}
		if k >= p.req.GPUs {
			return isl, true
		}
	}
	return 0, false
}

// scoreNode scores placing k GPUs on node n, which has u usable.
func (p *plan) scoreNode(n topology.NodeID, k, u int) Score {
	nodeFrag := p.nodeDelta(n, k)
	gangFrag := p.gangDelta1(n, k)
	leaf := p.e.c.Nodes[n].Up[topology.TierLeaf]
	return Score{
		Nodes: 1, Spans: 1, NodeFrag: nodeFrag, GangFrag: gangFrag, FragDelta: nodeFrag + gangFrag,
		DomainIdle: p.domainStats(leaf).IdleMilli - int64(k)*int64(p.share),
		FreeAfter:  u - k, Order: p.e.c.Nodes[n].Order,
	}
}

// nodeDelta is the increase of node n's FGD fragmentation when it gives k
// GPUs of this job's share (and their CPUs), cached by node signature: nodes
// in the same state change the same way.
func (p *plan) nodeDelta(n topology.NodeID, k int) float64 {
	key := p.s.NodeSig(n) ^ uint64(k)*0x9e3779b97f4a7c15
	if v, ok := p.e.deltaMemo[key]; ok {
		return v
	}
	m := p.e.meter
	before := m.Node(p.s, n)
	cpuAfter := p.s.FreeCPUMilli[n] - int32(p.cpuPerGPU*int64(k))
	var after [64]uint16
	free := p.s.NodeFree(n)
	nf := copy(after[:], free)
	var v float64
	if p.share < occupancy.WholeGPU {
		v = p.bestShareDelta(n, after[:nf], cpuAfter) - before
	} else {
		taken := 0
		for i := 0; i < nf && taken < k; i++ {
			if after[i] == occupancy.WholeGPU {
				after[i] = 0
				taken++
			}
		}
		v = m.NodeAfter(n, after[:nf], cpuAfter) - before
	}
	p.e.deltaMemo[key] = v
	return v
}

// bestShareDelta places a fractional share on the GPU that leaves the node
// least fragmented (FGD's GPU choice) and returns that fragmentation.
func (p *plan) bestShareDelta(n topology.NodeID, free []uint16, cpuAfter int32) float64 {
	best := -1.0
	for i, f := range free {
		if f < p.share {
			continue
		}
		free[i] -= p.share
		v := p.e.meter.NodeAfter(n, free, cpuAfter)
		free[i] += p.share
		if best < 0 || v < best {
			best = v
		}
	}
	return best
}

// compareLinks fills in the NVLink count of the GPU sets the best
// single-node candidates would get, for those tied on everything before
// Links, and re-sorts them.
func (p *plan) compareLinks(cands []Candidate) {
	top := 0
	for top < len(cands) && top < p.e.opts.LinkCandidates && sameBeforeLinks(&cands[0].Score, &cands[top].Score) {
		top++
	}
	if top < 2 || p.req.GPUs < 2 {
		return
	}
	for i := 0; i < top; i++ {
		n := cands[i].Nodes[0].Node
		if ch, ok := intranode.Choose(p.e.c, &p.e.c.Nodes[n], p.s.NodeFree(n), p.need(cands[i].pass, p.req.GPUs, false)); ok {
			cands[i].Score.Links = ch.Links
		}
	}
	head := cands[:top]
	for i := 1; i < len(head); i++ { // insertion sort of a handful
		for j := i; j > 0 && head[j].Score.Better(&head[j-1].Score); j-- {
			head[j], head[j-1] = head[j-1], head[j]
		}
	}
}

func sameBeforeLinks(a, b *Score) bool {
	return a.Nodes == b.Nodes && a.Spans == b.Spans && a.FragDelta <= b.FragDelta+fragEpsilon && b.FragDelta <= a.FragDelta+fragEpsilon
}
