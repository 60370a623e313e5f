package frag

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Meter evaluates the fragmentation of one cluster under one workload. It
// caches node amounts by node signature (occupancy.Signature): nodes in the
// same state fragment the same way, and a cluster has far fewer distinct
// node states than nodes, so placement scoring over thousands of nodes costs
// a map lookup per node. A Meter is not safe for concurrent use; make one
// per goroutine.
type Meter struct {
	Cluster  *topology.Cluster
	Workload *Workload
	cache    map[uint64]float64
	// fill holds the fill models by the GPU models of a node.
	fill       map[topology.ModelSet]*FillModel
	fillByNode []*FillModel
	// gangsByTier[t] lists the gang shapes measured at tier t.
	gangsByTier [topology.NumTiers][]int
}

// maxCache bounds the signature cache; it is cleared when full.
const maxCache = 1 << 16

// NewMeter returns a meter for cluster c and workload w (normalised).
func NewMeter(c *topology.Cluster, w *Workload) *Meter {
	m := &Meter{Cluster: c, Workload: w, cache: make(map[uint64]float64, 1024), fill: map[topology.ModelSet]*FillModel{}}
	for i, g := range w.Gangs {
		m.gangsByTier[g.Tier] = append(m.gangsByTier[g.Tier], i)
	}
	return m
}

// Node is F_n(M) of node n in snapshot s. Unusable nodes (drained, down)
// have no schedulable idle capacity and count 0.
func (m *Meter) Node(s *occupancy.Snapshot, n topology.NodeID) float64 {
	if !s.State[n].Usable() {
		return 0
	}
	return m.cached(s.NodeSig(n), s.NodeFree(n), int64(s.FreeCPUMilli[n]), m.Cluster.Nodes[n].Models)
}

// NodeAfter is F_n(M) of node n in a hypothetical state: free GPU shares
// and free CPU as given.
func (m *Meter) NodeAfter(n topology.NodeID, free []uint16, cpuLeft int32) float64 {
	models := m.Cluster.Nodes[n].Models
	return m.cached(occupancy.Signature(models, free, cpuLeft), free, int64(cpuLeft), models)
}

func (m *Meter) cached(sig uint64, free []uint16, cpuLeft int64, models topology.ModelSet) float64 {
	if v, ok := m.cache[sig]; ok {
		return v
	}
	if len(m.cache) >= maxCache {
		clear(m.cache)
	}
	v := NodeAmount(free, cpuLeft, models, m.Workload)
	m.cache[sig] = v
	return v
}

// HasGangs reports whether the workload has gang shapes measured at tier t.
func (m *Meter) HasGangs(t topology.Tier) bool { return len(m.gangsByTier[t]) > 0 }

// DomainStats are the counts GangAmount needs for one domain.
type DomainStats struct {
	IdleMilli   int64
	WholeNodes  int   // usable nodes with every GPU free
	WholeMilli  int64 // the idle milli-GPUs of those nodes
	GPUsPerNode int   // GPUs of the domain's largest node
	Models      topology.ModelSet
}

// Stats counts a domain's idle capacity and whole free nodes.
func (m *Meter) Stats(s *occupancy.Snapshot, d topology.DomainID) DomainStats {
	dom := &m.Cluster.Domains[d]
	var st DomainStats
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		if !s.State[n].Usable() {
			continue
		}
		node := &m.Cluster.Nodes[n]
		st.Models |= node.Models
		st.GPUsPerNode = max(st.GPUsPerNode, node.NumGPUs())
		st.IdleMilli += int64(s.IdleMilli(n))
		if s.WholeFree(n) == node.NumGPUs() && node.NumGPUs() > 0 {
			st.WholeNodes++
			st.WholeMilli += int64(node.NumGPUs()) * 1000
		}
	}
	return st
}

// Gangs is the gang part of the fragmentation of a domain with the given
// stats: sum over gang shapes of the domain's tier of p_g * F_D(g).
func (m *Meter) Gangs(tier topology.Tier, st DomainStats) float64 {
	total := 0.0
	for _, i := range m.gangsByTier[tier] {
		g := &m.Workload.Gangs[i]
		if g.Models != 0 && g.Models&st.Models == 0 {
			total += g.Weight * float64(st.IdleMilli)
			continue
		}
		total += g.Weight * GangAmount(st, g)
	}
	return total
}

// Total is F(M) for the whole snapshot: node amounts plus the gang amounts of
// every domain at each gang shape's tier.
func (m *Meter) Total(s *occupancy.Snapshot) float64 {
	total := 0.0
	for n := range m.Cluster.Nodes {
		total += m.Node(s, topology.NodeID(n))
	}
	for t := range m.gangsByTier {
		if len(m.gangsByTier[t]) == 0 {
			continue
		}
		for _, d := range m.Cluster.ByTier[t] {
			total += m.Gangs(topology.Tier(t), m.Stats(s, d))
		}
	}
	return total
}
