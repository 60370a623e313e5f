package topotest

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// NodeFunc makes the spec of a node with the given name.
type NodeFunc func(name string) topology.NodeSpec

// FatTreeSpec describes spines x leavesPerSpine x nodesPerLeaf nodes named
// node0001.. (width grows with the count), leaves leaf001.., spines
// spine01.., all in partition "gpu". With spines == 0 the leaves hang
// directly under the cluster.
func FatTreeSpec(name string, spines, leavesPerSpine, nodesPerLeaf int, hw NodeFunc) topology.Spec {
	s := topology.Spec{Name: name}
	total := max(spines, 1) * leavesPerSpine * nodesPerLeaf
	width := len(fmt.Sprint(total))
	node := 0
	leaf := 0
	mkLeaf := func() topology.LeafSpec {
		leaf++
		l := topology.LeafSpec{Name: fmt.Sprintf("leaf%02d", leaf)}
		for i := 0; i < nodesPerLeaf; i++ {
			node++
			ns := hw(fmt.Sprintf("node%0*d", width, node))
			ns.Partitions = []string{"gpu"}
			s.Nodes = append(s.Nodes, ns)
			l.Nodes = append(l.Nodes, ns.Name)
		}
		return l
	}
	if spines == 0 {
		for i := 0; i < leavesPerSpine; i++ {
			s.Leaves = append(s.Leaves, mkLeaf())
		}
		return s
	}
	for sp := 1; sp <= spines; sp++ {
		spine := topology.SpineSpec{Name: fmt.Sprintf("spine%d", sp)}
		for i := 0; i < leavesPerSpine; i++ {
			spine.Leaves = append(spine.Leaves, mkLeaf())
		}
		s.Spines = append(s.Spines, spine)
	}
	return s
}

// FatTree builds FatTreeSpec and panics on error (fixtures are valid).
func FatTree(spines, leavesPerSpine, nodesPerLeaf int, hw NodeFunc) *topology.Cluster {
	return MustBuild(FatTreeSpec("fattree", spines, leavesPerSpine, nodesPerLeaf, hw))
}

// Lab16 is the shape of the reference and end-to-end cluster: 16 nodes
// node01..node16 with 8 GPUs each, leaves leaf1..leaf4 of 4 nodes, spine1
// over leaf1-2 and spine2 over leaf3-4. GPUs are on NVSwitch.
func Lab16() *topology.Cluster {
	return MustBuild(Lab16Spec())
}

// Lab16Spec is the spec of Lab16.
func Lab16Spec() topology.Spec {
	s := topology.Spec{Name: "lab16"}
	for sp := 0; sp < 2; sp++ {
		spine := topology.SpineSpec{Name: fmt.Sprintf("spine%d", sp+1)}
		for l := 0; l < 2; l++ {
			leaf := topology.LeafSpec{Name: fmt.Sprintf("leaf%d", sp*2+l+1)}
			for k := 0; k < 4; k++ {
				n := DGXH100(fmt.Sprintf("node%02d", len(s.Nodes)+1))
				n.CPUs, n.MemoryMiB = 64, 1000000
				n.Partitions = []string{"gpu"}
				s.Nodes = append(s.Nodes, n)
				leaf.Nodes = append(leaf.Nodes, n.Name)
			}
			spine.Leaves = append(spine.Leaves, leaf)
		}
		s.Spines = append(s.Spines, spine)
	}
	return s
}

// SingleNode is a one-node cluster, for intra-node tests.
func SingleNode(n topology.NodeSpec) *topology.Cluster {
	n.Partitions = []string{"gpu"}
	return MustBuild(topology.Spec{Name: "single", Nodes: []topology.NodeSpec{n},
		Leaves: []topology.LeafSpec{{Name: "leaf1", Nodes: []string{n.Name}}}})
}

// NVL72 is a cluster of GB200 NVL72 racks: racks blocks of 18 four-GPU
// trays, two racks per leaf.
func NVL72(racks int) *topology.Cluster {
	s := topology.Spec{Name: "nvl72"}
	var leaf *topology.LeafSpec
	for r := 0; r < racks; r++ {
		if r%2 == 0 {
			s.Leaves = append(s.Leaves, topology.LeafSpec{Name: fmt.Sprintf("leaf%d", r/2+1)})
			leaf = &s.Leaves[len(s.Leaves)-1]
		}
		b := topology.BlockSpec{Name: fmt.Sprintf("rack%02d", r+1), NVLink: true}
		for t := 0; t < 18; t++ {
			n := GB200Tray(fmt.Sprintf("gb%02d-%02d", r+1, t+1))
			n.Partitions = []string{"gpu"}
			s.Nodes = append(s.Nodes, n)
			b.Nodes = append(b.Nodes, n.Name)
		}
		leaf.Blocks = append(leaf.Blocks, b)
	}
	return MustBuild(s)
}

// GB200Lab is the shape of the e2e GB200-like cluster
// (docs/examples/gb200-lab.yaml): racks NVLink blocks of trays four-GPU
// trays, all under one leaf; nodes gb01, gb02, ..., blocks rack1, rack2, ...
func GB200Lab(racks, trays int) *topology.Cluster {
	s := topology.Spec{Name: "gb200-lab", Leaves: []topology.LeafSpec{{Name: "leaf1"}}}
	for r := 0; r < racks; r++ {
		b := topology.BlockSpec{Name: fmt.Sprintf("rack%d", r+1), NVLink: true}
		for t := 0; t < trays; t++ {
			n := GB200Tray(fmt.Sprintf("gb%02d", r*trays+t+1))
			n.Partitions = []string{"gpu"}
			s.Nodes = append(s.Nodes, n)
			b.Nodes = append(b.Nodes, n.Name)
		}
		s.Leaves[0].Blocks = append(s.Leaves[0].Blocks, b)
	}
	return MustBuild(s)
}

// MustBuild builds a fixture spec or panics.
func MustBuild(s topology.Spec) *topology.Cluster {
	c, err := topology.Build(s)
	if err != nil {
		panic(fmt.Sprintf("topotest: fixture %s does not build: %v", s.Name, err))
	}
	return c
}
