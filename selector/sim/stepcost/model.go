package stepcost

import (
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Cost is what the model says about one job where it is placed.
type Cost struct {
	Class *Class // nil for a job of one GPU
	Split Split
	// Demand per parallelism, GB/s: the class's demand times the job's
	// slowest GPU's peak rate.
	Demand [NumParallelisms]float64
	// Placed and Best are the bandwidth each parallelism's slowest group
	// gets where the job is and where it would be best (+Inf: none).
	Placed, Best [NumParallelisms]float64
	// Factor is step(placed) / step(best), at least 1.
	Factor float64
}

// Model evaluates placements on one cluster at one band. It keeps the
// best placements it has worked out: one Model serves one replay and is
// not safe for concurrent use.
type Model struct {
	c    *topology.Cluster
	band Band
	best map[bestKey][NumParallelisms]float64
}

type bestKey struct {
	domain   topology.DomainID
	hardware string
	gpus     int
	class    *Class
}

// New is the model on cluster c at band b.
func New(c *topology.Cluster, b Band) *Model {
	return &Model{c: c, band: b, best: map[bestKey][NumParallelisms]float64{}}
}

// Band is the model's band.
func (m *Model) Band() Band { return m.band }

// Factor is how much longer job name runs with allocation a than at its
// best (1 for a job of one GPU).
func (m *Model) Factor(name string, a occupancy.Allocation) float64 {
	return m.Cost(name, a).Factor
}

// Cost works the job's cost out in full.
func (m *Model) Cost(name string, a occupancy.Allocation) Cost {
	return m.costOf(Draw(name, a.NumGPUs()), a)
}

// costOf is the cost of a job of class c (nil: none) with allocation a.
func (m *Model) costOf(c *Class, a occupancy.Allocation) Cost {
	cost := Cost{Factor: 1, Class: c}
	if c == nil {
		return cost
	}
	g := layout(m.c, a)
	cost.Split = splitFor(c, len(g))
	per := demands(cost.Class, m.band, cost.Split)
	rate := slowestTFLOPS(m.c, a)
	for p := range per {
		cost.Demand[p] = per[p] * rate
	}
	cost.Placed = bandwidths(m.c, g, cost.Split)
	cost.Best = m.bestFor(a.Nodes[0].Node, len(g), cost.Class, cost.Split)
	cost.Factor = factor(cost.Demand, cost.Placed, cost.Best)
	return cost
}

// factor is (1 + sum demand/placed) / (1 + sum demand/best), at least 1.
func factor(demand, placed, best [NumParallelisms]float64) float64 {
	num, den := 1.0, 1.0
	for p := range demand {
		if demand[p] == 0 {
			continue
		}
		num += demand[p] / placed[p]
		den += demand[p] / best[p]
	}
	return max(1, num/den)
}

// slowestTFLOPS is the peak rate of the allocation's slowest GPU: a
// synchronous job computes at its pace.
func slowestTFLOPS(c *topology.Cluster, a occupancy.Allocation) float64 {
	r := math.Inf(1)
	for _, na := range a.Nodes {
		r = min(r, c.Nodes[na.Node].Speeds.DenseTFLOPS)
	}
	return r
}

// layout lists an allocation's GPUs in rank order.
func layout(c *topology.Cluster, a occupancy.Allocation) []gpu {
	var g []gpu
	for _, na := range a.Nodes {
		n := &c.Nodes[na.Node]
		for _, i := range na.GPUs {
			g = append(g, gpu{node: na.Node, island: c.GPUs[n.GPU(i)].Island})
		}
	}
	return g
}

// bandwidths is, per parallelism, the bandwidth of its slowest group when
// the job splits as s over g (+Inf when it has no group of two).
func bandwidths(c *topology.Cluster, g []gpu, s Split) [NumParallelisms]float64 {
	var out [NumParallelisms]float64
	for p := range out {
		out[p] = math.Inf(1)
	}
	rank := func(tp, dp, pp int) gpu { return g[tp+s.TP*(dp+s.DP*pp)] }
	group := make([]gpu, 0, len(g))
	for pp := 0; pp < s.PP; pp++ {
		for dp := 0; dp < s.DP; dp++ {
			group = group[:0]
			for tp := 0; tp < s.TP; tp++ {
				group = append(group, rank(tp, dp, pp))
			}
			out[Tensor] = min(out[Tensor], ring(c, group))
		}
		for tp := 0; tp < s.TP; tp++ {
			group = group[:0]
			for dp := 0; dp < s.DP; dp++ {
				group = append(group, rank(tp, dp, pp))
			}
			out[Data] = min(out[Data], ring(c, group))
			for dp := 0; pp+1 < s.PP && dp < s.DP; dp++ {
				out[Pipeline] = min(out[Pipeline], pair(c, rank(tp, dp, pp), rank(tp, dp, pp+1)))
			}
		}
	}
	for i := 0; s.EP > 1 && i+s.EP <= len(g); i += s.EP {
		out[Expert] = min(out[Expert], allToAll(c, g[i:i+s.EP]))
	}
	return out
}

// bestFor is the bandwidths of the job's best placement: its GPUs packed
// on whole servers like its first node, in the tightest domain holding
// that node that has room for it on the empty cluster.
func (m *Model) bestFor(first topology.NodeID, gpus int, class *Class, s Split) [NumParallelisms]float64 {
	d := tightest(m.c, first, gpus)
	key := bestKey{domain: d, hardware: m.c.Nodes[first].Hardware, gpus: gpus, class: class}
	if b, ok := m.best[key]; ok {
		return b
	}
	b := bandwidths(m.c, packed(m.c, d, first, gpus), s)
	m.best[key] = b
	return b
}

// tightest is the tightest domain holding node first with at least gpus
// GPUs: one of its islands, the node, its block, leaf, spine, the cluster.
func tightest(c *topology.Cluster, first topology.NodeID, gpus int) topology.DomainID {
	n := &c.Nodes[first]
	for _, id := range n.Islands {
		if c.Domains[id].NumGPUs() >= gpus {
			return id
		}
	}
	for _, t := range []topology.Tier{topology.TierNode, topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		if d := n.Up[t]; d != topology.NoDomain && c.Domains[d].NumGPUs() >= gpus {
			return d
		}
	}
	return 0 // the cluster
}

// packed is gpus GPUs of domain d taken whole server by whole server,
// servers with first's hardware first (node order otherwise), each
// server's GPUs island by island.
func packed(c *topology.Cluster, d topology.DomainID, first topology.NodeID, gpus int) []gpu {
	dom := &c.Domains[d]
	if dom.Tier == topology.TierNVLink {
		g := make([]gpu, gpus)
		for i := range g {
			g[i] = gpu{node: first, island: d}
		}
		return g
	}
	var nodes []topology.NodeID
	for id := dom.NodeLo; id < dom.NodeHi; id++ {
		nodes = append(nodes, id)
	}
	hw := c.Nodes[first].Hardware
	slices.SortStableFunc(nodes, func(a, b topology.NodeID) int {
		return boolInt(c.Nodes[a].Hardware != hw) - boolInt(c.Nodes[b].Hardware != hw)
	})
	var g []gpu
	for _, id := range nodes {
		for _, isl := range c.Nodes[id].Islands {
			for _, x := range c.Domains[isl].IslandGPUs {
				if len(g) == gpus {
					return g
				}
				g = append(g, gpu{node: id, island: c.GPUs[x].Island})
			}
		}
	}
	return g
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
