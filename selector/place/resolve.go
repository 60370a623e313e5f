package place

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/intranode"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// plan is one Place call's resolved request and per-node state.
type plan struct {
	e   *Engine
	s   *occupancy.Snapshot
	req *request.Request
	res *Result

	share   uint16
	allowed topology.ModelSet // models the request accepts (0: any)
	// passes are the model sets tried one after the other: one model each,
	// or a single pass over every allowed model when the request mixes.
	passes    []topology.ModelSet
	won       topology.ModelSet // the pass of the winning candidate
	cpuPerGPU int64             // milli-CPUs per GPU (rounded up)
	memPerGPU int64             // MiB per GPU (rounded up)
	slice     int
	// group is the request's TaskGPUs when above 1: every node takes a
	// whole number of tasks' GPUs.
	group int
	// span is the nodes of one slice when slices span nodes of NVLink
	// blocks, spanPer the GPUs each of them gives (span.go); 0 otherwise.
	span, spanPer int
	partOK        []bool // by partition index; nil: any partition
	nodeOK        []bool // by NodeID: allowed and not excluded

	// ignoreState treats every node as usable (the "could it ever fit"
	// question asked of an empty snapshot).
	ignoreState bool
	// eligible[n] is false for nodes filtered out whatever the model.
	eligible []bool
	// capBuf and selBuf are scratch space for fitDomain and selectFlat.
	capBuf, selBuf []nodeCap
	rejected       reasonCounts
	firstTier      topology.Tier // the first tier tried counts rejection reasons
	// row is the engine's delta cache for this job's shape with rowK GPUs
	// on a node (see nodeDelta).
	row      []deltaSlot
	rowK     int
	fillRow  []deltaSlot
	fillRowK int
	// top holds the best candidates of the tier being tried, best first.
	top []Candidate
	// closest remembers, for the requested tier, the domain that came
	// nearest to holding the gang (for the "not now" message).
	closest struct {
		domain topology.DomainID
		gpus   int
	}
}

// resolve checks the request against the cluster and prepares a plan.
// Its errors are messages for the user.
func (e *Engine) resolve(s *occupancy.Snapshot, r *request.Request) (*plan, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	c := e.c
	p := &plan{e: e, s: s, req: r, share: uint16(r.Share()), slice: r.Slice, group: max(r.TaskGPUs, 1)}
	p.closest.domain = topology.NoDomain
	if r.GPUs == 0 {
		return nil, fmt.Errorf("gangtopo places GPU jobs; a CPU-only request is left to Slurm")
	}
	if r.Nodes == 0 && r.GPUsPerNode > 0 {
		// GPUs per node fix the node count (Validate checked that they
		// divide the GPUs), as Slurm sets min and max nodes from them
		r.Nodes = r.GPUs / r.GPUsPerNode
	}
	if err := p.resolveModels(); err != nil {
		return nil, err
	}
	if !c.HasTier(r.EffectiveTier()) {
		return nil, fmt.Errorf("cluster %s has no %s domains (tiers here: %s)", c.Name, r.EffectiveTier(), tierList(c))
	}
	if err := p.resolveFilters(); err != nil {
		return nil, err
	}
	if err := p.resolveSpan(); err != nil {
		return nil, err
	}
	p.cpuPerGPU = ceilDiv(r.CPUMilli, int64(r.GPUs))
	p.memPerGPU = ceilDiv(r.MemMiB, int64(r.GPUs))
	return p, nil
}

func (p *plan) resolveModels() error {
	c := p.e.c
	for _, name := range p.req.Models {
		m, ok := c.ModelByName(name)
		if !ok {
			return fmt.Errorf("unknown GPU model %q (models here: %s)", name, strings.Join(c.Models, ", "))
		}
		p.allowed = p.allowed.With(m)
	}
	var all topology.ModelSet
	for i := range c.Models {
		m := topology.ModelID(i)
		if p.allowed == 0 || p.allowed.Has(m) {
			p.passes = append(p.passes, topology.ModelSet(0).With(m))
			all = all.With(m)
		}
	}
	if p.req.MixModels {
		p.passes = []topology.ModelSet{all}
	}
	return nil
}

// resolveFilters resolves the request's partitions and node lists.
func (p *plan) resolveFilters() error {
	c := p.e.c
	if len(p.req.Partitions) > 0 {
		p.partOK = make([]bool, len(c.Partitions))
		for _, name := range p.req.Partitions {
			i, ok := c.PartitionByName(name)
			if !ok {
				return fmt.Errorf("unknown partition %q (partitions here: %s)", name, strings.Join(c.Partitions, ", "))
			}
			p.partOK[i] = true
		}
	}
	return p.resolveNodes()
}

func (p *plan) resolveNodes() error {
	c := p.e.c
	p.nodeOK = make([]bool, len(c.Nodes))
	if len(p.req.Allowed) == 0 {
		for i := range p.nodeOK {
			p.nodeOK[i] = true
		}
	}
	for _, name := range p.req.Allowed {
		id, ok := c.NodeByName(name)
		if !ok {
			return fmt.Errorf("unknown node %q in the allowed list", name)
		}
		p.nodeOK[id] = true
	}
	for _, name := range p.req.Excluded {
		id, ok := c.NodeByName(name)
		if !ok {
			return fmt.Errorf("unknown node %q in the excluded list", name)
		}
		p.nodeOK[id] = false
	}
	return nil
}

func tierList(c *topology.Cluster) string {
	var names []string
	for _, t := range c.PresentTiers() {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}

func ceilDiv(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return (a + b - 1) / b
}

// filterNodes marks the nodes that can take any part of the job, counting
// why the others cannot.
func (p *plan) filterNodes() {
	c := p.e.c
	p.eligible = make([]bool, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		var why Reason
		switch {
		case !p.ignoreState && !p.s.State[i].Usable():
			why = ReasonState
		case p.partOK != nil && !inPartition(n, p.partOK):
			why = ReasonPartition
		case !p.nodeOK[i]:
			why = ReasonExcluded
		case p.allowed != 0 && n.Models&p.allowed == 0:
			why = ReasonModel
		case !p.ignoreState && !p.wholeEnough(topology.NodeID(i)):
			why = ReasonBusy
		}
		if why != "" {
			p.rejected.add(why)
			continue
		}
		p.eligible[i] = true
	}
}

// wholeEnough says whether node n is as free as the request needs whole:
// nothing allocated for WholeNodes (--exclusive), all its memory free for
// AllMemory (--mem=0).
func (p *plan) wholeEnough(n topology.NodeID) bool {
	r := p.req
	return (!r.WholeNodes || p.s.IsIdle(n)) && (!r.AllMemory || p.s.FreeMemMiB[n] >= p.e.c.Nodes[n].MemoryMiB)
}

func inPartition(n *topology.Node, ok []bool) bool {
	for _, pi := range n.Partitions {
		if ok[pi] {
			return true
		}
	}
	return false
}

// usable is how many GPUs of the models ms node n can give this job now:
// GPUs with the share free, in whole slices per island, capped by the
// node's free CPUs and memory.
func (p *plan) usable(n topology.NodeID, ms topology.ModelSet) int {
	if !p.eligible[n] || p.e.c.Nodes[n].Models&ms == 0 || p.span > 0 && !p.spanNode(n) {
		return 0
	}
	u := p.gpuUsable(n, ms)
	// Divide only when CPU or memory is short (a division costs more than
	// the rest of the test).
	if cpu := int64(p.s.FreeCPUMilli[n]); p.cpuPerGPU > 0 && cpu < p.cpuPerGPU*int64(u) {
		u = int(cpu / p.cpuPerGPU)
	}
	if mem := p.s.FreeMemMiB[n]; p.memPerGPU > 0 && mem < p.memPerGPU*int64(u) {
		u = int(mem / p.memPerGPU)
	}
	if p.slice > 1 {
		u = u / p.slice * p.slice
	}
	return u / p.group * p.group
}

// gpuUsable counts GPUs ignoring CPU and memory, with a fast path for the
// common whole-GPU, single-model, no-slice case.
func (p *plan) gpuUsable(n topology.NodeID, ms topology.ModelSet) int {
	node := &p.e.c.Nodes[n]
	if p.share == occupancy.WholeGPU && node.Models&^ms == 0 && p.slice <= 1 {
		return p.s.WholeFree(n)
	}
	return intranode.Usable(p.e.c, node, p.s.NodeFree(n), p.need(ms, 0, false))
}

// need is the intranode request for count GPUs of the models ms.
func (p *plan) need(ms topology.ModelSet, count int, multiNode bool) intranode.Need {
	return intranode.Need{Count: count, Milli: p.share, Slice: p.slice, Models: ms, MultiNode: multiNode}
}

// whyNot names the first resource a node lacks for one GPU of the models ms.
func (p *plan) whyNot(n topology.NodeID, ms topology.ModelSet) Reason {
	switch {
	case p.e.c.Nodes[n].Models&ms == 0:
		return ReasonModel
	case p.gpuUsable(n, ms) < max(1, p.slice):
		return ReasonGPUs
	case p.cpuPerGPU > 0 && int64(p.s.FreeCPUMilli[n]) < p.cpuPerGPU:
		return ReasonCPU
	case p.memPerGPU > 0 && p.s.FreeMemMiB[n] < p.memPerGPU:
		return ReasonMemory
	}
	return ReasonGPUs
}
