package slurmscale

import (
	"fmt"
	"strings"
)

// The scale labs' clusters, written as cluster files (the YAML the plugin,
// the controller and the lab read), so that the lab emulates exactly what
// gangtopo is told:
//
//	fattree  S spines x 16 leaves x 16 nodes of 8 H100 (DGX H100-like):
//	         128 nodes (1 spine x 8 leaves), 256, 512 and 1,024 (4 spines)
//	nvl72    racks of 18 trays of 4 GPUs (a GB200 NVL72 rack is one
//	         NVLink block of 72 GPUs), 4 racks a leaf, 4 leaves a spine:
//	         the block topology of the newer Slurm series
//	         (TopologyPlugin=topology/block)

// Shape names a cluster family.
type Shape string

// The shapes.
const (
	FatTree Shape = "fattree"
	NVL72   Shape = "nvl72"
)

// nodesPerLeaf and leavesPerSpine of the fat tree; racks of the NVL72
// cluster.
const (
	nodesPerLeaf   = 16
	leavesPerSpine = 16
	traysPerRack   = 18
	racksPerLeaf   = 4
	nvlLeaves      = 4 // leaves per spine in the NVL72 cluster
)

// ClusterYAML writes the cluster file of shape with about nodes nodes:
// the fat tree's nodes are a multiple of 16 (whole leaves, spines of 16
// leaves), the NVL72 cluster's of 18 (whole racks, at least nodes).
func ClusterYAML(shape Shape, nodes int) (string, error) {
	switch shape {
	case FatTree:
		if nodes < nodesPerLeaf || nodes%nodesPerLeaf != 0 {
			return "", fmt.Errorf("slurmscale: a fat tree of %d nodes: want a multiple of %d", nodes, nodesPerLeaf)
		}
		return fatTreeYAML(nodes / nodesPerLeaf), nil
	case NVL72:
		if nodes < traysPerRack {
			return "", fmt.Errorf("slurmscale: an NVL72 cluster of %d nodes: want at least one rack (%d)", nodes, traysPerRack)
		}
		return nvl72YAML((nodes + traysPerRack - 1) / traysPerRack), nil
	}
	return "", fmt.Errorf("slurmscale: unknown cluster shape %q (want %s or %s)", shape, FatTree, NVL72)
}

const h100Hardware = `  dgx-h100:
    cpus: 64
    memory_mib: 1000000
    gpus:
      count: 8
      model: h100
      memory_mib: 81559
      nvlink: nvswitch
      links_per_pair: 18
      numa: [0, 0, 0, 0, 1, 1, 1, 1]
`

const gb200Hardware = `  gb200-tray:
    cpus: 72
    memory_mib: 480000
    gpus:
      count: 4
      model: b200
      memory_mib: 189471
      nvlink: nvswitch
      links_per_pair: 18
      numa: [0, 0, 1, 1]
`

// fatTreeYAML is leaves leaves of 16 nodes, 16 leaves a spine (the last
// spine may have fewer).
func fatTreeYAML(leaves int) string {
	nodes := leaves * nodesPerLeaf
	var b strings.Builder
	fmt.Fprintf(&b, "# written by tests/slurmscale: %d DGX H100-like nodes, %d leaves of %d, %d leaves a spine\n",
		nodes, leaves, nodesPerLeaf, leavesPerSpine)
	fmt.Fprintf(&b, "version: v1\nname: scale%d\nhardware:\n%s", nodes, h100Hardware)
	fmt.Fprintf(&b, "nodes:\n  - {names: \"%s\", hardware: dgx-h100, partitions: [gpu]}\n", nodeRange(1, nodes))
	b.WriteString("topology:\n  spines:\n")
	for l := 0; l < leaves; l++ {
		if l%leavesPerSpine == 0 {
			fmt.Fprintf(&b, "    - name: spine%d\n      leaves:\n", l/leavesPerSpine+1)
		}
		lo := l*nodesPerLeaf + 1
		fmt.Fprintf(&b, "        - {name: leaf%d, nodes: \"%s\"}\n", l+1, nodeRange(lo, lo+nodesPerLeaf-1))
	}
	return b.String()
}

// nodeRange is a host list of gpu nodes lo..hi, four digits wide.
func nodeRange(lo, hi int) string { return fmt.Sprintf("gpu[%04d-%04d]", lo, hi) }

// nvl72YAML is racks racks of 18 trays, 4 racks a leaf, 4 leaves a spine.
func nvl72YAML(racks int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by tests/slurmscale: %d GB200 NVL72-like racks of %d trays of 4 GPUs (%d nodes), %d racks a leaf, %d leaves a spine\n",
		racks, traysPerRack, racks*traysPerRack, racksPerLeaf, nvlLeaves)
	fmt.Fprintf(&b, "version: v1\nname: nvl%d\nhardware:\n%s", racks, gb200Hardware)
	fmt.Fprintf(&b, "nodes:\n  - {names: \"%s\", hardware: gb200-tray, partitions: [gpu]}\n", rackRange(1, racks))
	b.WriteString("topology:\n  spines:\n")
	for r := 0; r < racks; r++ {
		if r%(racksPerLeaf*nvlLeaves) == 0 {
			fmt.Fprintf(&b, "    - name: spine%d\n      leaves:\n", r/(racksPerLeaf*nvlLeaves)+1)
		}
		if r%racksPerLeaf == 0 {
			fmt.Fprintf(&b, "        - name: leaf%d\n          blocks:\n", r/racksPerLeaf+1)
		}
		fmt.Fprintf(&b, "            - {name: rack%02d, nodes: \"%s\"}\n", r+1, rackRange(r+1, r+1))
	}
	return b.String()
}

// rackRange is the host list of the trays of racks lo..hi: r01-[01-18],...
func rackRange(lo, hi int) string {
	var parts []string
	for r := lo; r <= hi; r++ {
		parts = append(parts, fmt.Sprintf("r%02d-[01-%02d]", r, traysPerRack))
	}
	return strings.Join(parts, ",")
}
