package frag

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Report is the fragmentation report of one snapshot: what `gangtopo frag`
// prints and the sidecar daemon exports as metrics.
type Report struct {
	Cluster    string `json:"cluster"`
	Generation uint64 `json:"generation"`
	TotalGPUs  int    `json:"total_gpus"`
	// AllocatedMilli is the GPU capacity held by jobs; IdleMilli the free
	// capacity on usable nodes; OfflineMilli the free capacity on drained,
	// down or unknown nodes (not schedulable).
	AllocatedMilli int64 `json:"allocated_milli"`
	IdleMilli      int64 `json:"idle_milli"`
	OfflineMilli   int64 `json:"offline_milli"`
	// FragMilli is FGD's cluster fragmentation (node shapes of the
	// workload); FragRate = FragMilli / IdleMilli, in percent. GangMilli is
	// gangtopo's gang/tier part (see package doc).
	FragMilli float64 `json:"frag_milli"`
	FragRate  float64 `json:"frag_rate"`
	GangMilli float64 `json:"gang_milli"`
	// StrandedMilli is idle capacity no node shape of the workload can use
	// where it is: per node, the smallest loss over the shapes.
	StrandedMilli float64 `json:"stranded_milli"`
	// Largest free block per tier: the domain with the most whole free GPUs.
	Largest []Block `json:"largest"`
	// Startable: how many gangs of each typical size could start now, each
	// within one node (sizes up to a node) or one leaf (larger), counted per
	// model and for any model.
	Startable []Startable `json:"startable"`
	// Leaves summarises each leaf.
	Leaves []LeafSummary `json:"leaves"`
	// Degraded lists the blocks, leaves and spines with failed members
	// (degraded.go); omitted when there are none.
	Degraded []Degraded `json:"degraded,omitempty"`
}

// Block is the largest free block of one tier.
type Block struct {
	Tier   topology.Tier `json:"tier"`
	Domain string        `json:"domain"`
	GPUs   int           `json:"gpus"`
}

// Startable counts the gangs of one size (and model) that could start now.
type Startable struct {
	GPUs  int    `json:"gpus"`
	Model string `json:"model"` // "" for any model
	Count int    `json:"count"`
}

// LeafSummary is one leaf's occupancy.
type LeafSummary struct {
	Name           string `json:"name"`
	Nodes          int    `json:"nodes"`
	WholeFreeNodes int    `json:"whole_free_nodes"`
	FreeGPUs       int    `json:"free_gpus"` // whole free GPUs on usable nodes
	TotalGPUs      int    `json:"total_gpus"`
}

// TypicalGangSizes are the gang sizes the report counts.
var TypicalGangSizes = []int{1, 2, 4, 8, 16, 32, 64}

// BuildReport measures a snapshot.
func (m *Meter) BuildReport(s *occupancy.Snapshot) Report {
	c := m.Cluster
	r := Report{Cluster: c.Name, Generation: s.Generation, TotalGPUs: len(c.GPUs)}
	for i := range c.Nodes {
		n := topology.NodeID(i)
		idle := int64(0)
		for _, f := range s.NodeFree(n) {
			idle += int64(f)
		}
		r.AllocatedMilli += int64(c.Nodes[i].NumGPUs())*1000 - idle
		if !s.State[n].Usable() {
			r.OfflineMilli += idle
			continue
		}
		r.IdleMilli += idle
		r.FragMilli += m.Node(s, n)
		r.StrandedMilli += m.stranded(s, n)
	}
	for t := range m.gangsByTier {
		for _, d := range c.ByTier[t] {
			if len(m.gangsByTier[t]) > 0 {
				r.GangMilli += m.Gangs(topology.Tier(t), m.Stats(s, d))
			}
		}
	}
	if r.IdleMilli > 0 {
		r.FragRate = 100 * r.FragMilli / float64(r.IdleMilli)
	}
	r.Largest = largestBlocks(c, s)
	r.Startable = startable(c, s)
	r.Leaves = leafSummaries(c, s)
	r.Degraded = DegradedDomains(s)
	return r
}

// stranded is the idle capacity of node n that even the node shape losing
// least cannot use.
func (m *Meter) stranded(s *occupancy.Snapshot, n topology.NodeID) float64 {
	var sorted [64]uint16
	k := sortedCopy(sorted[:], s.NodeFree(n))
	idle := 0
	for _, f := range sorted[:k] {
		idle += int(f)
	}
	if idle == 0 {
		return 0
	}
	best := idle
	for i := range m.Workload.Node {
		sh := &m.Workload.Node[i]
		if sh.GPUs == 0 {
			continue
		}
		_, loss := shapeLoss(sorted[:k], idle, int64(s.FreeCPUMilli[n]), m.Cluster.Nodes[n].Models, sh)
		best = min(best, loss)
	}
	return float64(best)
}

func wholeFree(c *topology.Cluster, s *occupancy.Snapshot, n topology.NodeID) int {
	if !s.State[n].Usable() {
		return 0
	}
	return s.WholeFree(n)
}

func largestBlocks(c *topology.Cluster, s *occupancy.Snapshot) []Block {
	var out []Block
	for _, t := range c.PresentTiers() {
		b := Block{Tier: t}
		for _, d := range c.ByTier[t] {
			dom := &c.Domains[d]
			free := 0
			if t == topology.TierNVLink {
				for _, g := range dom.IslandGPUs {
					if s.FreeMilli[g] == occupancy.WholeGPU && s.State[c.GPUs[g].Node].Usable() {
						free++
					}
				}
			} else {
				for n := dom.NodeLo; n < dom.NodeHi; n++ {
					free += wholeFree(c, s, n)
				}
			}
			if free > b.GPUs {
				b.GPUs, b.Domain = free, dom.Name
			}
		}
		out = append(out, b)
	}
	return out
}

// startable counts disjoint gangs per size: inside one node, sum over nodes
// of floor(free/size); larger ones inside one leaf, sum over leaves of
// floor(free in leaf / size). Per model, only GPUs of that model count.
func startable(c *topology.Cluster, s *occupancy.Snapshot) []Startable {
	maxNode := 0
	for i := range c.Nodes {
		maxNode = max(maxNode, c.Nodes[i].NumGPUs())
	}
	models := []topology.ModelSet{0}
	names := []string{""}
	if len(c.Models) > 1 {
		for i, name := range c.Models {
			models = append(models, topology.ModelSet(0).With(topology.ModelID(i)))
			names = append(names, name)
		}
	}
	var out []Startable
	for mi, ms := range models {
		for _, size := range TypicalGangSizes {
			count := 0
			for _, l := range c.ByTier[topology.TierLeaf] {
				dom := &c.Domains[l]
				leafFree := 0
				for n := dom.NodeLo; n < dom.NodeHi; n++ {
					if ms != 0 && c.Nodes[n].Models&ms == 0 {
						continue
					}
					f := wholeFree(c, s, n)
					if size <= maxNode {
						count += f / size
					}
					leafFree += f
				}
				if size > maxNode {
					count += leafFree / size
				}
			}
			out = append(out, Startable{GPUs: size, Model: names[mi], Count: count})
		}
	}
	return out
}

func leafSummaries(c *topology.Cluster, s *occupancy.Snapshot) []LeafSummary {
	var out []LeafSummary
	for _, l := range c.ByTier[topology.TierLeaf] {
		dom := &c.Domains[l]
		ls := LeafSummary{Name: dom.Name, Nodes: dom.NumNodes(), TotalGPUs: dom.NumGPUs()}
		for n := dom.NodeLo; n < dom.NodeHi; n++ {
			f := wholeFree(c, s, n)
			ls.FreeGPUs += f
			if f == c.Nodes[n].NumGPUs() && f > 0 {
				ls.WholeFreeNodes++
			}
		}
		out = append(out, ls)
	}
	return out
}
