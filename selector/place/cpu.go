package place

import (
	"fmt"
	"math"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// placeCPU places a CPU-only request (no GPUs) on one node.
//
// A CPU-only job on a GPU node costs GPUs even though it takes none: the
// CPUs and memory it holds may be the ones a later GPU job would have
// needed there. So the node is chosen by the fill model's own measure
// (frag.FillModel via Meter.Waste): the growth of the GPU capacity the
// node's remaining CPUs could no longer feed, at the engine's resolution
// (fillTie). Among equals it takes the node with the least idle GPU
// capacity, then the busiest leaf, then the lowest Slurm node order: the
// measure knows only the typical jobs' CPUs per GPU, and a later job may
// want more, so a CPU job goes where there are fewest GPUs left to strand
// (a node whose GPUs are all taken, or one without GPUs), keeping whole
// nodes whole.
//
// Only one-node requests are placed; a multi-node CPU job is Invalid (the
// plugin leaves it to Slurm).
func (e *Engine) placeCPU(s *occupancy.Snapshot, r *request.Request) Result {
	if r.Nodes > 1 {
		return Result{Status: Invalid, Message: fmt.Sprintf("a CPU-only job over %d nodes is left to Slurm (gangtopo places CPU-only jobs on one node)", r.Nodes)}
	}
	p := &plan{e: e, s: s, req: r}
	if err := p.resolveFilters(); err != nil {
		return Result{Status: Invalid, Message: err.Error()}
	}
	res := Result{Status: NoFit, Domain: topology.NoDomain}
	p.res = &res
	e.startCall()
	p.filterNodes()
	cpu := int32(min(r.CPUMilli, math.MaxInt32))
	for i := range e.c.Nodes {
		n := topology.NodeID(i)
		if !p.eligible[n] {
			continue
		}
		if s.FreeCPUMilli[n] < cpu {
			p.rejected.add(ReasonCPU)
			continue
		}
		if s.FreeMemMiB[n] < r.MemMiB {
			p.rejected.add(ReasonMemory)
			continue
		}
		d := e.meter.WasteAfter(n, s.NodeFree(n), s.FreeCPUMilli[n]-cpu) - e.meter.Waste(s, n)
		sc := Score{Nodes: 1, Spans: 1, NodeFrag: math.Round(d/fillTie) * fillTie, Order: e.c.Nodes[n].Order,
			FreeAfter: s.IdleMilli(n)}
		if leaf := e.c.Nodes[n].Up[topology.TierLeaf]; leaf != topology.NoDomain {
			sc.DomainIdle = p.domainStats(leaf).IdleMilli
		}
		sc.FragDelta = sc.NodeFrag
		if !p.wouldKeep(&sc) {
			continue
		}
		p.offer(Candidate{Domain: e.c.Nodes[n].Up[topology.TierNode], Tier: topology.TierNode,
			Nodes: []NodeShare{{Node: n}}, Score: sc})
	}
	res.Rejected = p.rejected.toMap()
	if len(p.top) == 0 {
		if never, limit := e.cpuNever(r); never {
			res.Status, res.Limit = Impossible, limit
			res.Message = fmt.Sprintf("no node of cluster %s can ever hold %s", e.c.Name, cpuJob(r))
		} else {
			res.Message = fmt.Sprintf("no node has room now for %s", cpuJob(r))
		}
		return res
	}
	best := p.top[0]
	n := best.Nodes[0].Node
	res.Status, res.Tier, res.Domain = Placed, topology.TierNode, best.Domain
	// Slurm gives an exclusive job every CPU of its node, and a --mem=0 job
	// all its memory
	mem := r.MemMiB
	if r.WholeNodes {
		cpu = s.FreeCPUMilli[n]
	}
	if r.WholeNodes || r.AllMemory {
		mem = max(mem, s.FreeMemMiB[n])
	}
	res.Alloc = occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n, CPUMilli: cpu, MemMiB: mem}}}
	res.Candidates = append([]Candidate(nil), p.top...)
	for _, a := range p.top[1:] {
		res.Alternatives = append(res.Alternatives, a.Domain)
	}
	res.Message = fmt.Sprintf("placed %s on %s", cpuJob(r), e.c.Nodes[n].Name)
	return res
}

// cpuNever says whether no eligible node could hold the job even empty,
// and what rules it out when some node is eligible (Result.Limit):
// ReasonCPU when no eligible node has the CPUs, else ReasonMemory.
func (e *Engine) cpuNever(r *request.Request) (bool, Reason) {
	p := &plan{e: e, s: e.empty, req: r, ignoreState: true}
	if p.resolveFilters() != nil {
		return true, ""
	}
	p.filterNodes()
	var limit Reason
	anyCPU := false
	for i := range e.c.Nodes {
		n := &e.c.Nodes[i]
		if !p.eligible[i] {
			continue
		}
		cpuOK := n.CPUs == 0 || int64(n.CPUs)*1000 >= r.CPUMilli
		memOK := n.MemoryMiB == 0 || n.MemoryMiB >= r.MemMiB
		if cpuOK && memOK {
			return false, ""
		}
		anyCPU = anyCPU || cpuOK
		limit = ReasonCPU
	}
	if anyCPU {
		limit = ReasonMemory
	}
	return true, limit
}

func cpuJob(r *request.Request) string {
	s := fmt.Sprintf("a CPU-only job of %g CPUs", float64(r.CPUMilli)/1000)
	if r.MemMiB > 0 {
		s += fmt.Sprintf(" and %d MiB", r.MemMiB)
	}
	return s
}
