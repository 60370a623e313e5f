package place

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Why a gang can never fit, resource by resource.
//
// The engine measures a request in GPUs; CPUs and memory come per GPU
// (request.CPUMilli and MemMiB divided by the GPU count). A gang that can
// never fit is ruled out by one of: too few GPUs of its model in any domain
// of its tier, too few CPUs or too little memory on the nodes for its share
// per GPU, or a shape (nodes x GPUs per node) no domain has. limitMessage
// tells these apart on the empty cluster by counting each domain's GPUs
// with and without the CPU and memory limits, so that the user reads the
// real reason and the most the cluster offers of it, instead of a GPU count
// that is not the problem.

// capacity is the most GPUs of the request one domain of tier t (one node,
// or one NVLink island, at those tiers) could ever give, counting on every
// eligible node the GPUs alone, then at most as many as its CPUs (cpu) and
// its memory (mem) allow at the request's share per GPU; and the most nodes
// one domain has that could each hold the shape's GPUs per node.
func (p *plan) capacity(t topology.Tier, cpu, mem bool) (gpus, nodes int) {
	c := p.e.c
	per := p.perNode()
	for _, ms := range p.passes {
		count := func(n topology.NodeID) int {
			if !p.eligible[n] || c.Nodes[n].Models&ms == 0 {
				return 0
			}
			k := p.gpuUsable(n, ms)
			if t == topology.TierNVLink && !c.Nodes[n].InBlock() {
				k, _ = p.largestIsland(n, ms)
			}
			if cpu && p.cpuPerGPU > 0 {
				k = min(k, int(int64(p.s.FreeCPUMilli[n])/p.cpuPerGPU))
			}
			if mem && p.memPerGPU > 0 {
				k = min(k, int(p.s.FreeMemMiB[n]/p.memPerGPU))
			}
			if p.slice > 1 {
				k = k / p.slice * p.slice
			}
			return k / p.group * p.group
		}
		if t <= topology.TierNode && !(t == topology.TierNVLink && p.nvlinkBlocksOnly()) || p.req.Nodes == 1 {
			for i := range c.Nodes {
				k := count(topology.NodeID(i))
				gpus, nodes = max(gpus, k), max(nodes, min(k, 1))
			}
			continue
		}
		for _, d := range c.ByTier[t] {
			dom := &c.Domains[d]
			sum, fit := 0, 0
			for n := dom.NodeLo; n < dom.NodeHi; n++ {
				k := count(n)
				sum += k
				if per == 0 && k > 0 || per > 0 && k >= per {
					fit++
				}
			}
			gpus, nodes = max(gpus, sum), max(nodes, fit)
		}
	}
	return gpus, nodes
}

// limit names the resource that rules the request out of tier t on the
// empty cluster when its GPUs alone would fit: ReasonCPU, else
// ReasonMemory; "" when the GPUs, the shape or the tier do (Result.Limit).
func (p *plan) limit(t topology.Tier) Reason {
	r := p.req
	short := func(cpu, mem bool) bool {
		gpus, nodes := p.capacity(t, cpu, mem)
		return gpus < r.GPUs || r.Nodes > 1 && p.perNode() > 0 && nodes < r.Nodes
	}
	switch {
	case short(false, false):
		return ""
	case short(true, false):
		return ReasonCPU
	case short(false, true):
		return ReasonMemory
	}
	return ""
}

// limitMessage says why the request can never fit tier t when GPUs alone
// are not the reason: CPUs, memory, or its shape; "" when the GPUs are (the
// caller then names the largest domain).
func (e *Engine) limitMessage(p *plan, t topology.Tier, what string) string {
	r := p.req
	if r.Nodes > 1 && t <= topology.TierNode && !(t == topology.TierNVLink && p.nvlinkBlocksOnly()) {
		hint := "ask for one node"
		if wider := e.fittingTier(*r); wider != 0 {
			hint = fmt.Sprintf("use --gang-topology=%s, or %s", wider, hint)
		}
		return fmt.Sprintf("%s can never fit %s: it asks for %d nodes, and --gang-topology=%s keeps a job on one node here; %s",
			what, e.where(t), r.Nodes, t, hint)
	}
	if most := p.mostOnNodes(r.Nodes); r.Nodes > 1 && p.perNode() == 0 && most < r.GPUs {
		return fmt.Sprintf("%s can never fit: it asks for %d nodes, and the %d largest nodes hold %d GPUs it may use; ask for more nodes or at most %d GPUs",
			what, r.Nodes, r.Nodes, most, most)
	}
	gpus, nodes := p.capacity(t, false, false)
	if gpus < r.GPUs {
		return ""
	}
	withCPU, _ := p.capacity(t, true, false)
	withMem, _ := p.capacity(t, false, true)
	var why, less []string
	if withCPU < r.GPUs {
		why = append(why, fmt.Sprintf("CPUs rule it out: it asks %s CPUs (%s per GPU) and a node has at most %d",
			milli(r.CPUMilli), milli(p.cpuPerGPU), p.mostCPUs()))
		less = append(less, "fewer CPUs")
	}
	if withMem < r.GPUs {
		why = append(why, fmt.Sprintf("memory rules it out: it asks %d MiB (%d per GPU) and a node has at most %d MiB",
			r.MemMiB, p.memPerGPU, p.mostMemory()))
		less = append(less, "less memory")
	}
	where := e.where(t)
	if len(why) > 0 {
		most, _ := p.capacity(t, true, true)
		msg := fmt.Sprintf("%s can never fit %s: %s", what, where, strings.Join(why, "; "))
		hint := "ask for " + strings.Join(less, " and ")
		if most > 0 {
			msg += fmt.Sprintf(", so %s holds at most %d such GPUs", e.one(t), most)
			hint += fmt.Sprintf(" or at most %d GPUs", most)
		}
		return msg + "; " + hint
	}
	if per := p.perNode(); r.Nodes > 1 && per == 0 && nodes < r.Nodes {
		hint := fmt.Sprintf("ask for at most %d nodes", nodes)
		if wider := e.fittingTier(*r); wider != 0 {
			hint = fmt.Sprintf("use --gang-topology=%s, or %s", wider, hint)
		}
		return fmt.Sprintf("%s can never fit %s: the node count rules it out: it asks for %d nodes and %s has at most %d it may use; %s",
			what, where, r.Nodes, e.one(t), nodes, hint)
	}
	if per := p.perNode(); r.Nodes > 1 && per > 0 && nodes == 0 {
		most := p.mostOnNodes(1)
		return fmt.Sprintf("%s can never fit: the shape rules it out: it asks for %d GPUs on each node and the largest node it may use has %d; ask for more nodes, with at most %d GPUs each",
			what, per, most, most)
	}
	if per := p.perNode(); r.Nodes > 1 && per > 0 && nodes < r.Nodes {
		hint := fmt.Sprintf("ask for at most %d nodes", nodes)
		if wider := e.fittingTier(*r); wider != 0 {
			hint = fmt.Sprintf("use --gang-topology=%s, or %s", wider, hint)
		}
		return fmt.Sprintf("%s can never fit %s: the shape rules it out: it asks %d nodes with %d GPUs each and %s has at most %d such nodes; %s",
			what, where, r.Nodes, per, e.one(t), nodes, hint)
	}
	return ""
}

// mostOnNodes is the most GPUs k nodes the request may use could give
// together (the k largest, GPUs alone).
func (p *plan) mostOnNodes(k int) int {
	var sizes []int
	for i := range p.e.c.Nodes {
		most := 0
		for _, ms := range p.passes {
			if p.eligible[i] && p.e.c.Nodes[i].Models&ms != 0 {
				most = max(most, p.gpuUsable(topology.NodeID(i), ms))
			}
		}
		sizes = append(sizes, most)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	sum := 0
	for i := 0; i < k && i < len(sizes); i++ {
		sum += sizes[i]
	}
	return sum
}

// mostCPUs and mostMemory are the largest node's, among those the request
// may use.
func (p *plan) mostCPUs() int64 {
	var most int64
	for i := range p.e.c.Nodes {
		if p.eligible[i] {
			most = max(most, int64(p.s.FreeCPUMilli[i]))
		}
	}
	return most / 1000
}

func (p *plan) mostMemory() int64 {
	var most int64
	for i := range p.e.c.Nodes {
		if p.eligible[i] {
			most = max(most, p.s.FreeMemMiB[i])
		}
	}
	return most
}

// where words "inside one domain of tier t" with the cluster's name for
// tier any: "in one leaf", "in cluster lab16".
func (e *Engine) where(t topology.Tier) string {
	if t == topology.TierCluster {
		return "in cluster " + e.c.Name
	}
	return "in one " + t.String()
}

// one names one domain of tier t: "one leaf", "the cluster".
func (e *Engine) one(t topology.Tier) string {
	if t == topology.TierCluster {
		return "the cluster"
	}
	return "one " + t.String()
}

// milli writes a milli-count as a decimal: 1500 -> "1.5".
func milli(v int64) string {
	return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
}
