package place

import (
	"github.com/gangtopo/gangtopo/selector/intranode"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// allocate chooses the GPUs of each node of the winning candidate and
// splits the job's CPUs and memory over the nodes in proportion to their
// GPUs (the totals are exact; per-node amounts never exceed what usable
// assumed).
func (p *plan) allocate(best *Candidate) (occupancy.Allocation, bool) {
	c := p.e.c
	multi := len(best.Nodes) > 1
	var a occupancy.Allocation
	cum := 0
	for _, sh := range best.Nodes {
		node := &c.Nodes[sh.Node]
		need := p.need(best.pass, sh.GPUs, multi)
		cpuBefore := p.req.CPUMilli * int64(cum) / int64(p.req.GPUs)
		memBefore := p.req.MemMiB * int64(cum) / int64(p.req.GPUs)
		cum += sh.GPUs
		cpu := p.req.CPUMilli*int64(cum)/int64(p.req.GPUs) - cpuBefore
		mem := p.req.MemMiB*int64(cum)/int64(p.req.GPUs) - memBefore
		if p.share < occupancy.WholeGPU {
			// The GPU for a share: the one the node scoring assumed
			// (the fill model for one node, FGD for gangs).
			cpuAfter := p.s.FreeCPUMilli[sh.Node] - int32(cpu)
			need.Frag = func(after []uint16) float64 { return p.e.meter.WasteAfter(sh.Node, after, cpuAfter) }
			if multi {
				need.Frag = func(after []uint16) float64 { return p.e.meter.NodeAfter(sh.Node, after, cpuAfter) }
			}
		}
		ch, ok := intranode.Choose(c, node, p.s.NodeFree(sh.Node), need)
		if !ok {
			return occupancy.Allocation{}, false
		}
		a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: sh.Node, GPUs: ch.GPUs, Milli: p.share,
			CPUMilli: int32(cpu), MemMiB: mem})
	}
	return a, true
}
