package picture

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Cell is the state of one GPU in a cluster picture.
type Cell uint8

// Cells. Requeued and Gang mark a defragmentation plan: the GPUs it frees
// (drawn on the picture before) and the ones the gang then takes (after).
const (
	Free Cell = iota
	Busy
	Shared // a fraction of the GPU is taken
	Offline
	Requeued
	Gang
)

// Node is one server's GPUs.
type Node struct {
	Name  string
	Cells []Cell
}

// Row is one line of a cluster picture: the nodes of a leaf, or of an
// NVLink block inside a leaf, named by their domains ("spine1 / leaf01 /
// rack01"; the spine only where there are several).
type Row struct {
	Name  string
	Nodes []Node
}

// View is a cluster as pictured: its rows in tree order.
type View struct {
	Title string
	Rows  []Row
}

// FromCluster pictures snapshot s of cluster c: a row per leaf, or per
// NVLink block of a leaf and one for the leaf's nodes outside its blocks.
func FromCluster(c *topology.Cluster, s *occupancy.Snapshot) View {
	v := View{Title: "cluster " + c.Name}
	spines := len(c.ByTier[topology.TierSpine]) > 1
	for _, l := range c.ByTier[topology.TierLeaf] {
		leaf := &c.Domains[l]
		name := leaf.Name
		if up := leaf.Parent; spines && up != topology.NoDomain && c.Domains[up].Tier == topology.TierSpine {
			name = c.Domains[up].Name + " / " + name
		}
		var loose Row
		loose.Name = name
		for _, b := range leaf.Children {
			if blk := &c.Domains[b]; blk.Tier == topology.TierBlock {
				r := Row{Name: name + " / " + blk.Name}
				for n := blk.NodeLo; n < blk.NodeHi; n++ {
					r.Nodes = append(r.Nodes, nodeOf(c, s, n))
				}
				v.Rows = append(v.Rows, r)
			}
		}
		for n := leaf.NodeLo; n < leaf.NodeHi; n++ {
			if c.Nodes[n].Up[topology.TierBlock] == topology.NoDomain {
				loose.Nodes = append(loose.Nodes, nodeOf(c, s, n))
			}
		}
		if len(loose.Nodes) > 0 {
			v.Rows = append(v.Rows, loose)
		}
	}
	return v
}

func nodeOf(c *topology.Cluster, s *occupancy.Snapshot, n topology.NodeID) Node {
	nd := Node{Name: c.Nodes[n].Name}
	usable := s.State[n].Usable()
	for _, f := range s.NodeFree(n) {
		cell := Free
		switch {
		case !usable:
			cell = Offline
		case f == 0:
			cell = Busy
		case f < occupancy.WholeGPU:
			cell = Shared
		}
		nd.Cells = append(nd.Cells, cell)
	}
	return nd
}

// Mark sets the cells of a on its nodes to cell (a plan's requeued jobs,
// or its gang), in a picture of c.
func (v *View) Mark(c *topology.Cluster, a occupancy.Allocation, cell Cell) {
	for _, na := range a.Nodes {
		name := c.Nodes[na.Node].Name
		for ri := range v.Rows {
			for ni := range v.Rows[ri].Nodes {
				nd := &v.Rows[ri].Nodes[ni]
				if nd.Name != name {
					continue
				}
				for _, g := range na.GPUs {
					if g >= 0 && g < len(nd.Cells) {
						nd.Cells[g] = cell
					}
				}
			}
		}
	}
}

// Only keeps the rows holding at least one of the nodes (the domain a plan
// works in).
func (v View) Only(nodes map[string]bool) View {
	out := View{Title: v.Title}
	for _, r := range v.Rows {
		for _, n := range r.Nodes {
			if nodes[n.Name] {
				out.Rows = append(out.Rows, r)
				break
			}
		}
	}
	return out
}

// nodeCount is the number of nodes pictured.
func (v View) nodeCount() int {
	n := 0
	for _, r := range v.Rows {
		n += len(r.Nodes)
	}
	return n
}
