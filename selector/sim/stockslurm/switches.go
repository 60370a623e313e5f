package stockslurm

import (
	"slices"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// infinite is Slurm's INFINITE distance between unconnected switches.
const infinite = 1<<31 - 1

// switchTable is topology/tree's switch_record_table for a cluster, in the
// order a topology.conf generated from the cluster lists the switches:
// leaves first (tree order), then spines, then one top switch over
// everything when there is more than one leaf. Leaves have level 0.
type switchTable struct {
	level  []int
	parent []int   // Slurm's parent index; a root's is 0, as xcalloc leaves it
	nodes  [][]int // Slurm node indices under each switch, ascending
	dist   [][]int // hop distance between switches (switches_dist)
	leaves int     // switches [0, leaves) are the leaf switches
}

// newSwitchTable builds the table. idx maps a NodeID to its Slurm index.
func newSwitchTable(c *topology.Cluster, idx []int) *switchTable {
	leafIDs := c.ByTier[topology.TierLeaf]
	spineIDs := c.ByTier[topology.TierSpine]
	var doms []topology.DomainID
	doms = append(doms, leafIDs...)
	doms = append(doms, spineIDs...)
	if len(leafIDs) > 1 {
		doms = append(doms, 0) // the cluster root as the top switch
	}
	pos := map[topology.DomainID]int{}
	for i, d := range doms {
		pos[d] = i
	}
	t := &switchTable{leaves: len(leafIDs), level: make([]int, len(doms)), parent: make([]int, len(doms)),
		nodes: make([][]int, len(doms))}
	realParent := make([]int, len(doms))
	for i, d := range doms {
		dom := &c.Domains[d]
		t.level[i] = levelOf(dom.Tier, len(spineIDs) > 0)
		realParent[i] = -1
		if p, ok := pos[dom.Parent]; ok && dom.Parent != topology.NoDomain {
			t.parent[i], realParent[i] = p, p
		}
		for n := dom.NodeLo; n < dom.NodeHi; n++ {
			t.nodes[i] = append(t.nodes[i], idx[n])
		}
		slices.Sort(t.nodes[i])
	}
	t.dist = treeDistances(realParent)
	return t
}

// levelOf is the switch level of a domain tier: leaves 0, spines 1, the
// top switch one above the highest level below it.
func levelOf(t topology.Tier, haveSpines bool) int {
	switch t {
	case topology.TierLeaf:
		return 0
	case topology.TierSpine:
		return 1
	}
	if haveSpines {
		return 2
	}
	return 1
}

// treeDistances is the hop count between every pair of switches of a
// forest given by parent links (-1 for a root); switches in different
// trees are infinitely far apart.
func treeDistances(parent []int) [][]int {
	n := len(parent)
	dist := make([][]int, n)
	for i := range dist {
		dist[i] = make([]int, n)
		up := map[int]int{} // ancestor -> hops from i
		for a, h := i, 0; a >= 0; a, h = parent[a], h+1 {
			up[a] = h
		}
		for j := 0; j < n; j++ {
			dist[i][j] = infinite
			for a, h := j, 0; a >= 0; a, h = parent[a], h+1 {
				if hi, ok := up[a]; ok {
					dist[i][j] = hi + h
					break
				}
			}
		}
	}
	return dist
}
