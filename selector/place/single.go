package place

import (
	"math"
	"math/bits"

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
	countReasons := t == p.firstTier && ms == p.passes[0]
	for _, n := range p.e.candidateNodes(ms, countReasons) {
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
		sc := p.scoreNode(n, g, u, c.Nodes[n].Models&ms)
		if !p.wouldKeep(&sc) {
			continue
		}
		one[0] = NodeShare{n, g}
		p.offer(Candidate{Domain: dom, Tier: t, Nodes: one[:], Score: sc, pass: ms})
	}
}

// candidateNodes lists the nodes a pass over models ms must visit: those
// with a GPU of a single model ms, or every node when ms mixes models or
// when the pass counts rejection reasons (a node of another model is
// counted as lacking the model).
func (e *Engine) candidateNodes(ms topology.ModelSet, all bool) []topology.NodeID {
	if all || bits.OnesCount64(uint64(ms)) != 1 {
		return e.allNodes
	}
	return e.byModel[bits.TrailingZeros64(uint64(ms))]
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
	if len(node.Islands) == node.NumGPUs() && p.req.GPUs == 1 {
		// Islands of one GPU each, created in GPU order: the first GPU
		// with room is in the first island with room.
		for i, f := range free {
			if f >= p.share && ms.Has(c.GPUs[node.GPU(i)].Model) {
				return c.GPUs[node.GPU(i)].Island, true
			}
		}
		return 0, false
	}
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

// scoreNode scores placing k GPUs of models ms on node n, which has u
// usable. The node part of the fragmentation is the fill model's
// (fillDelta) plus the capacity the placement is expected to deny jobs
// restricted to those models (scarcity.go), rounded to fillTie; gangs,
// scored in gang.go, keep FGD's per-node measure.
func (p *plan) scoreNode(n topology.NodeID, k, u int, ms topology.ModelSet) Score {
	rho := p.e.scarce.of(ms)
	nodeFrag := math.Round((p.fillDelta(n, k)+scarcityCost(rho, k, p.share))/fillTie) * fillTie
	gangFrag := p.gangDelta1(n, k)
	leaf := p.e.c.Nodes[n].Up[topology.TierLeaf]
	sc := Score{
		Nodes: 1, Spans: 1, NodeFrag: nodeFrag, GangFrag: gangFrag, FragDelta: nodeFrag + gangFrag, Scarcity: rho,
		DomainIdle: p.domainStats(leaf).IdleMilli - int64(k)*int64(p.share),
		FreeAfter:  u - k, Order: p.e.c.Nodes[n].Order,
	}
	if p.e.lending {
		p.scoreLend(&sc, []NodeShare{{n, k}})
	}
	return sc
}

// fillTie is the resolution of a single-node job's NodeFrag (fillDelta
// plus the scarcity cost) in milli-GPUs. Differences below
// it (under a tenth of a GPU) are within the error of the fill model's
// expectation; counting them as ties lets the packing tie-breaks (busier
// domain, then Slurm's node order: a stable first fit) decide instead. On
// the FGD traces this resolution placed better than both the exact
// deltas and FGD's own sigmoid quantisation.
const fillTie = 80

// fillDelta is the increase of node n's expected waste (frag.FillModel)
// when it gives k GPUs of this job's share and their CPUs, plus, for whole
// GPUs, the increase of FGD's F_n over the typical multi-GPU shapes (see
// Engine.multiGPU); scoreNode rounds it. A share goes to the GPU that
// wastes least (allocate makes the same choice). Cached like nodeDelta, in
// rows of its own (a negative k in the shape key).
func (p *plan) fillDelta(n topology.NodeID, k int) float64 {
	sig := p.s.NodeSig(n)
	if p.fillRow == nil || p.fillRowK != k {
		p.fillRow, p.fillRowK = p.e.shapeRow(-k, p.share, p.cpuPerGPU), k
	}
	if slot := &p.fillRow[n]; slot.set && slot.sig == sig {
		return slot.val
	}
	v := p.fillDeltaUncached(n, k)
	p.fillRow[n] = deltaSlot{sig, v, true}
	return v
}

func (p *plan) fillDeltaUncached(n topology.NodeID, k int) float64 {
	m := p.e.meter
	before := m.Waste(p.s, n)
	cpuAfter := p.s.FreeCPUMilli[n] - int32(p.cpuPerGPU*int64(k))
	var after [64]uint16
	nf := copy(after[:], p.s.NodeFree(n))
	var v float64
	if p.share < occupancy.WholeGPU {
		v = -1
		for i := 0; i < nf; i++ {
			if after[i] < p.share {
				continue
			}
			after[i] -= p.share
			if w := m.WasteAfter(n, after[:nf], cpuAfter); v < 0 || w < v {
				v = w
			}
			after[i] += p.share
		}
		v -= before
	} else {
		takeWhole(after[:nf], k)
		v = m.WasteAfter(n, after[:nf], cpuAfter) - before
		if mm := p.e.multiGPU; mm != nil {
			v += mm.NodeAfter(n, after[:nf], cpuAfter) - mm.Node(p.s, n)
		}
	}
	return v
}

// nodeDelta is the increase of node n's FGD fragmentation when it gives k
// GPUs of this job's share (and their CPUs), cached by node signature and
// request shape: nodes in the same state change the same way, in this call
// and in later ones (the engine's workload does not change).
func (p *plan) nodeDelta(n topology.NodeID, k int) float64 {
	sig := p.s.NodeSig(n)
	if p.row == nil || p.rowK != k {
		p.row, p.rowK = p.e.shapeRow(k, p.share, p.cpuPerGPU), k
	}
	row := p.row
	if slot := &row[n]; slot.set && slot.sig == sig {
		return slot.val
	}
	key := deltaKey(sig, k, p.share, p.cpuPerGPU)
	if v, ok := p.e.deltaMemo[key]; ok {
		row[n] = deltaSlot{sig, v, true}
		return v
	}
	if len(p.e.deltaMemo) >= maxDeltaMemo {
		clear(p.e.deltaMemo)
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
		takeWhole(after[:nf], k)
		v = m.NodeAfter(n, after[:nf], cpuAfter) - before
	}
	p.e.deltaMemo[key] = v
	row[n] = deltaSlot{sig, v, true}
	return v
}

// deltaSlot caches one node's delta for one request shape: valid while the
// node's signature is sig. Rows of slots (one per node) per request shape
// sit in front of deltaMemo, so the common case, a node unchanged since it
// was last scored for a job of this shape, costs an array read rather
// than a lookup in a large map.
type deltaSlot struct {
	sig uint64
	val float64
	set bool
}

type shapeKey struct {
	k         int
	share     uint16
	cpuPerGPU int64
}

// maxShapeRows bounds the per-shape rows; all are dropped when full.
const maxShapeRows = 256

// shapeRow returns the per-node delta cache of one request shape.
func (e *Engine) shapeRow(k int, share uint16, cpuPerGPU int64) []deltaSlot {
	key := shapeKey{k, share, cpuPerGPU}
	if row, ok := e.shapeRows[key]; ok {
		return row
	}
	if len(e.shapeRows) >= maxShapeRows {
		clear(e.shapeRows)
	}
	row := make([]deltaSlot, len(e.c.Nodes))
	e.shapeRows[key] = row
	return row
}

// maxDeltaMemo bounds the engine's delta cache; it is cleared when full.
const maxDeltaMemo = 1 << 18

// deltaKey mixes a node signature with the request shape (FNV-1a style).
func deltaKey(sig uint64, k int, share uint16, cpuPerGPU int64) uint64 {
	const prime = 1099511628211
	h := sig
	for _, v := range [3]uint64{uint64(k), uint64(share), uint64(cpuPerGPU)} {
		h = (h ^ v) * prime
	}
	return h
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
	return a.Nodes == b.Nodes && a.Spans == b.Spans && a.LendOpen == b.LendOpen && a.LendHeld == b.LendHeld && a.FragDelta <= b.FragDelta+fragEpsilon && b.FragDelta <= a.FragDelta+fragEpsilon
}

// takeWhole marks the first k entirely free GPUs of free as taken, as the
// placement of k whole GPUs on the node would.
func takeWhole(free []uint16, k int) {
	for i := 0; i < len(free) && k > 0; i++ {
		if free[i] == occupancy.WholeGPU {
			free[i] = 0
			k--
		}
	}
}
