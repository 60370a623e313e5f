package queue

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// feasibility answers "what is the tightest domain that could hold a gang
// of g GPUs right now?", the yardstick of the tightest-feasible metric.
//
// A domain could hold the gang when it has g whole free GPUs of one GPU
// model on nodes that take work (a training gang on mixed models runs at
// the pace of the slowest, so no policy should count that as tight). Only
// when no domain of any tier has g free GPUs of one model are the models
// pooled, so a policy that mixes models still gets a yardstick. CPUs and
// memory are not checked: the replay asks for few enough CPUs per GPU that
// they never bind.
//
// Counting is one pass over the free GPUs, adding each to its island and
// to every enclosing domain (per model and pooled), then one pass over the
// domains of each tier, tightest first.
type feasibility struct {
	c       *topology.Cluster
	columns int     // models + 1 (pooled)
	count   []int32 // by DomainID * columns + model (or pooled)
}

func newFeasibility(c *topology.Cluster) *feasibility {
	k := len(c.Models) + 1
	return &feasibility{c: c, columns: k, count: make([]int32, len(c.Domains)*k)}
}

// tightest returns the tightest tier that could hold g GPUs in snapshot s,
// or 0 when not even the pooled cluster has g free GPUs.
func (f *feasibility) tightest(s *occupancy.Snapshot, g int) topology.Tier {
	f.fill(s)
	return f.tightestCounted(g)
}

// tightestCounted is tightest over the current counts.
func (f *feasibility) tightestCounted(g int) topology.Tier {
	for _, pooled := range []bool{false, true} {
		for _, t := range topology.Tiers() {
			if f.holds(t, g, pooled) {
				return t
			}
		}
	}
	return 0
}

// fill counts the whole free GPUs of usable nodes into every domain.
func (f *feasibility) fill(s *occupancy.Snapshot) {
	clear(f.count)
	c := f.c
	for i := range c.Nodes {
		if !s.State[i].Usable() || s.WholeFree(topology.NodeID(i)) == 0 {
			continue
		}
		for local, milli := range s.NodeFree(topology.NodeID(i)) {
			if milli == occupancy.WholeGPU {
				f.addGPU(&c.Nodes[i], local, 1)
			}
		}
	}
}

// add counts the GPUs of an allocation as freed (delta 1) or taken (-1),
// for updates between fills.
func (f *feasibility) add(a occupancy.Allocation, delta int32) {
	for _, na := range a.Nodes {
		for _, local := range na.GPUs {
			f.addGPU(&f.c.Nodes[na.Node], local, delta)
		}
	}
}

func (f *feasibility) addGPU(n *topology.Node, local int, delta int32) {
	k := f.columns
	gpu := &f.c.GPUs[n.GPU(local)]
	m, pooled := int(gpu.Model), k-1
	f.count[int(gpu.Island)*k+m] += delta
	f.count[int(gpu.Island)*k+pooled] += delta
	for t := topology.TierNode; t <= topology.TierCluster; t++ {
		if d := n.Up[t]; d != topology.NoDomain {
			f.count[int(d)*k+m] += delta
			f.count[int(d)*k+pooled] += delta
		}
	}
}

// within reports, from the current counts, whether some domain of tier
// limit or tighter holds g free GPUs of one model.
func (f *feasibility) within(limit topology.Tier, g int) bool {
	for _, t := range topology.Tiers() {
		if t > limit {
			break
		}
		if f.holds(t, g, false) {
			return true
		}
	}
	return false
}

// holds reports whether some domain of tier t has g free GPUs of one model
// (or pooled). At tier nvlink, NVLink blocks count as well as islands.
func (f *feasibility) holds(t topology.Tier, g int, pooled bool) bool {
	c := f.c
	domains := c.ByTier[t]
	if f.any(domains, g, pooled, false) {
		return true
	}
	return t == topology.TierNVLink && f.any(c.ByTier[topology.TierBlock], g, pooled, true)
}

func (f *feasibility) any(domains []topology.DomainID, g int, pooled, nvlinkOnly bool) bool {
	k := f.columns
	for _, d := range domains {
		if nvlinkOnly && !f.c.Domains[d].NVLink {
			continue
		}
		row := f.count[int(d)*k : int(d)*k+k]
		if pooled {
			if int(row[k-1]) >= g {
				return true
			}
			continue
		}
		for _, v := range row[:k-1] {
			if int(v) >= g {
				return true
			}
		}
	}
	return false
}
