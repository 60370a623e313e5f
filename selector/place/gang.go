package place

import (
	"sort"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// nodeCap is a node's usable GPU count for the current pass.
type nodeCap struct {
	n topology.NodeID
	u int
}

// gangs tries every domain of gang tier t (block, leaf, spine, cluster).
func (p *plan) gangs(t topology.Tier, ms topology.ModelSet) {
	c := p.e.c
	for _, d := range c.ByTier[t] {
		if t == topology.TierBlock && p.nvlinkBlocksOnly() && !c.Domains[d].NVLink {
			continue
		}
		p.fitDomain(d, t, ms)
	}
}

// perNode is the fixed GPUs-per-node of the request's shape, or 0.
func (p *plan) perNode() int {
	if p.spanPer > 0 {
		return p.spanPer
	}
	return perNodeOf(*p.req)
}

// perNodeOf is the GPUs per node a request fixes, or 0. A node count
// alone fixes an even split only when it is whole tasks (TaskGPUs): Slurm
// puts 3 tasks of 2 GPUs on 2 nodes as 4 + 2, not 3 + 3.
func perNodeOf(r request.Request) int {
	switch {
	case r.GPUsPerNode > 0:
		return r.GPUsPerNode
	case r.Nodes > 0 && r.GPUs%r.Nodes == 0 && (r.GPUs/r.Nodes)%max(r.TaskGPUs, 1) == 0:
		return r.GPUs / r.Nodes
	}
	return 0
}

// fitDomain builds the candidate of domain d, if the gang fits there now.
func (p *plan) fitDomain(d topology.DomainID, t topology.Tier, ms topology.ModelSet) {
	dom := &p.e.c.Domains[d]
	g := p.perNode()
	nodes := p.capBuf[:0]
	capacity := 0
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		u := p.usable(n, ms)
		if u == 0 || g > 0 && u < g {
			continue
		}
		nodes = append(nodes, nodeCap{n, u})
	}
	if p.span > 0 {
		nodes = p.spanNodes(nodes)
	}
	for _, nc := range nodes {
		capacity += p.capacityOf(nc)
	}
	p.capBuf = nodes
	if (t == p.req.EffectiveTier() || t == topology.TierBlock && p.nvlinkBlocksOnly()) && capacity > p.closest.gpus {
		p.closest.domain, p.closest.gpus = d, capacity
	}
	if capacity < p.req.GPUs || p.req.Nodes > 0 && g == 0 && len(nodes) < p.req.Nodes {
		p.rejected.add(ReasonDomain)
		return
	}
	var shares []NodeShare
	if p.req.Nodes > 0 && g == 0 {
		shares = p.selectCount(nodes, p.req.GPUs, p.req.Nodes)
	} else {
		shares = p.selectIn(d, nodes, p.req.GPUs)
	}
	if shares == nil || p.req.Nodes > 0 && len(shares) != p.req.Nodes {
		p.rejected.add(ReasonDomain)
		return
	}
	p.offer(Candidate{Domain: d, Tier: t, Nodes: shares, Score: p.scoreGang(d, nodes, shares), pass: ms})
}

// selectIn picks nodes inside domain d for need GPUs. Inside a leaf or block
// it selects flat (selectFlat). Above, it keeps the gang in as few child
// domains as possible: the smallest child that can hold the rest (best
// fit), else the largest child entirely, and so on.
func (p *plan) selectIn(d topology.DomainID, nodes []nodeCap, need int) []NodeShare {
	c := p.e.c
	dom := &c.Domains[d]
	if dom.Tier <= topology.TierBlock || dom.Tier == topology.TierLeaf && p.span == 0 {
		return p.selectFlat(nodes, need)
	}
	type child struct {
		id       topology.DomainID
		nodes    []nodeCap
		capacity int
	}
	var kids []child
	i := 0
	for _, cd := range dom.Children {
		sub := &c.Domains[cd]
		j := i
		for j < len(nodes) && nodes[j].n < sub.NodeHi {
			j++
		}
		k := child{id: cd, nodes: nodes[i:j]}
		for _, nc := range k.nodes {
			k.capacity += p.capacityOf(nc)
		}
		if p.span > 0 { // whole slices only (fitDomain kept whole slices per block)
			k.capacity -= k.capacity % (p.span * p.spanPer)
		}
		if k.capacity > 0 {
			kids = append(kids, k)
		}
		i = j
	}
	sort.SliceStable(kids, func(a, b int) bool { return kids[a].capacity > kids[b].capacity })
	fewestFirst := p.span > 0 && dom.Tier == topology.TierLeaf // blocks of a leaf (span.go)
	if fewestFirst {
		spanOrder(kids, func(k child) int { return k.capacity })
	}
	var out []NodeShare
	for need > 0 && len(kids) > 0 {
		fit := -1
		for k := range kids { // smallest child holding the rest
			if kids[k].capacity >= need {
				fit = k
				if fewestFirst {
					break
				}
			}
		}
		take := fit
		if take < 0 {
			take = 0 // the largest child whole (with fewestFirst the smallest)
		}
		amount := min(need, kids[take].capacity)
		part := p.selectIn(kids[take].id, kids[take].nodes, amount)
		if part == nil {
			return nil
		}
		out = append(out, part...)
		need -= amount
		kids = append(kids[:take], kids[take+1:]...)
	}
	if need > 0 {
		return nil
	}
	return out
}

// capacityOf is what a node contributes to the gang: g for a fixed shape,
// else everything usable.
func (p *plan) capacityOf(nc nodeCap) int {
	if g := p.perNode(); g > 0 {
		return g
	}
	return nc.u
}

// selectFlat picks nodes of one leaf or block.
//
// A fixed shape (N x g) takes the N nodes where g is the tightest fit
// (fewest usable GPUs left over), then the smallest fragmentation increase.
// A free shape takes as few nodes as possible: the fullest-capacity nodes,
// with the last one chosen by best fit (the smallest node that holds the
// remainder), so big free nodes are not broken for a remainder.
func (p *plan) selectFlat(nodes []nodeCap, need int) []NodeShare {
	order := func(a, b nodeCap, k int) bool {
		da, db := p.nodeDelta(a.n, k), p.nodeDelta(b.n, k)
		if da != db {
			return da < db
		}
		return p.e.c.Nodes[a.n].Order < p.e.c.Nodes[b.n].Order
	}
	cands := append(p.selBuf[:0], nodes...)
	p.selBuf = cands
	if g := p.perNode(); g > 0 {
		sort.Slice(cands, func(i, j int) bool {
			if cands[i].u != cands[j].u {
				return cands[i].u < cands[j].u
			}
			return order(cands[i], cands[j], g)
		})
		if len(cands)*g < need {
			return nil
		}
		out := make([]NodeShare, need/g)
		for i := range out {
			out[i] = NodeShare{cands[i].n, g}
		}
		return out
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].u != cands[j].u {
			return cands[i].u > cands[j].u
		}
		return order(cands[i], cands[j], cands[i].u)
	})
	var out []NodeShare
	for i := 0; i < len(cands) && need > 0; i++ {
		if cands[i].u >= need {
			// Last node: the smallest one from here on that holds the rest.
			last := i
			for j := i + 1; j < len(cands) && cands[j].u >= need; j++ {
				if cands[j].u < cands[last].u || cands[j].u == cands[last].u && order(cands[j], cands[last], need) {
					last = j
				}
			}
			return append(out, NodeShare{cands[last].n, need})
		}
		out = append(out, NodeShare{cands[i].n, cands[i].u})
		need -= cands[i].u
	}
	return nil
}

// selectCount picks exactly count nodes for need GPUs that do not divide
// evenly among them (Slurm's -N 3 --gpus=8): of the nodes sorted by usable
// GPUs, fewest first, the first run of count consecutive ones that holds
// need (the tightest such nodes, so whole free nodes stay whole where
// partly used ones suffice), each given at least one GPU (one slice, with
// slice=S: usable counts whole slices then) and the fuller ones as many as
// the rest allows. nil when no count nodes hold need. A split fixed per
// node goes through selectIn instead.
func (p *plan) selectCount(nodes []nodeCap, need, count int) []NodeShare {
	unit := max(p.slice, 1)
	if len(nodes) < count || count < 1 || need%unit != 0 || count*unit > need {
		return nil
	}
	cands := append(p.selBuf[:0], nodes...)
	p.selBuf = cands
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].u != cands[j].u {
			return cands[i].u < cands[j].u
		}
		return p.e.c.Nodes[cands[i].n].Order < p.e.c.Nodes[cands[j].n].Order
	})
	sum := 0
	for i := 0; i < len(cands); i++ {
		sum += cands[i].u
		if i >= count {
			sum -= cands[i-count].u
		}
		if i < count-1 || sum < need || cands[i-count+1].u < unit {
			continue
		}
		run := cands[i-count+1 : i+1]
		out := make([]NodeShare, count)
		left := need
		for k := count - 1; k >= 0; k-- { // fullest first, one unit kept for each node after it
			give := min(run[k].u, left-k*unit)
			out[count-1-k] = NodeShare{run[k].n, give}
			left -= give
		}
		return out
	}
	return nil
}

// scoreGang scores a gang candidate in domain d.
func (p *plan) scoreGang(d topology.DomainID, nodes []nodeCap, shares []NodeShare) Score {
	c := p.e.c
	sc := Score{Nodes: len(shares), Order: c.Nodes[shares[0].Node].Order}
	leaves := map[topology.DomainID]bool{}
	used := 0
	for _, sh := range shares {
		sc.NodeFrag += p.nodeDelta(sh.Node, sh.GPUs)
		leaves[c.Nodes[sh.Node].Up[topology.TierLeaf]] = true
		used += sh.GPUs
	}
	sc.Spans = len(leaves)
	sc.GangFrag = p.gangDelta(shares)
	sc.FragDelta = sc.NodeFrag + sc.GangFrag
	for _, nc := range nodes {
		sc.FreeAfter += nc.u
	}
	sc.FreeAfter -= used
	sc.DomainIdle = p.idleIn(d) - int64(used)*int64(p.share)
	p.scoreLend(&sc, shares)
	return sc
}

// idleIn sums the idle milli-GPUs of a domain from its leaves' statistics.
func (p *plan) idleIn(d topology.DomainID) int64 {
	c := p.e.c
	dom := &c.Domains[d]
	if dom.Tier <= topology.TierLeaf {
		return p.domainStats(d).IdleMilli
	}
	var idle int64
	for _, l := range c.ByTier[topology.TierLeaf] {
		if ld := &c.Domains[l]; ld.NodeLo >= dom.NodeLo && ld.NodeHi <= dom.NodeHi {
			idle += p.domainStats(l).IdleMilli
		}
	}
	return idle
}

// gangDelta is the change of the gang part of the fragmentation when the
// shares are taken: per domain of each gang shape's tier, idle capacity
// drops and whole free nodes that are used stop being whole.
func (p *plan) gangDelta(shares []NodeShare) float64 {
	m := p.e.meter
	total := 0.0
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		if !m.HasGangs(t) {
			continue
		}
		for i, sh := range shares {
			d := p.e.c.Nodes[sh.Node].Up[t]
			if d == topology.NoDomain || seenDomain(p.e.c, shares[:i], t, d) {
				continue
			}
			st := *p.domainStats(d)
			after := st
			for _, o := range shares[i:] {
				if p.e.c.Nodes[o.Node].Up[t] != d {
					continue
				}
				after.IdleMilli -= int64(o.GPUs) * int64(p.share)
				if p.s.IsWholeNodeFree(o.Node) {
					after.WholeNodes--
				}
			}
			total += m.Gangs(t, after) - m.Gangs(t, st)
		}
	}
	return total
}

// gangDelta1 is gangDelta for one node, cached per leaf and per whether
// the node is whole before: every such node of a leaf changes the leaf's
// gang fragmentation the same way (the request, so k, is fixed per call).
// Workloads with block or spine gang shapes are not cached.
func (p *plan) gangDelta1(n topology.NodeID, k int) float64 {
	if len(p.e.opts.Workload.Gangs) == 0 {
		return 0 // no typical gangs: nothing to keep whole
	}
	var one [1]NodeShare
	one[0] = NodeShare{n, k}
	if !p.e.leafGangsOnly {
		return p.gangDelta(one[:])
	}
	leaf := p.e.c.Nodes[n].Up[topology.TierLeaf]
	i := 2 * int(p.e.ordinal[leaf])
	if p.s.IsWholeNodeFree(n) {
		i++
	}
	memo := p.e.gangMemo
	if memo[i] != memo[i] { // NaN: not computed in this call
		memo[i] = p.gangDelta(one[:])
	}
	return memo[i]
}

func seenDomain(c *topology.Cluster, shares []NodeShare, t topology.Tier, d topology.DomainID) bool {
	for _, sh := range shares {
		if c.Nodes[sh.Node].Up[t] == d {
			return true
		}
	}
	return false
}
