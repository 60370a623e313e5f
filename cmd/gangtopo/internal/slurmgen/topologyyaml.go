package slurmgen

import (
	"fmt"
	"io"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Names of the topologies topology.yaml holds.
const (
	yamlTree  = "tree"
	yamlBlock = "block"
)

// topologyYAML writes topology.yaml (Slurm 25.05 and later): the switch
// tree as topology "tree" and, when the cluster has blocks, the blocks as
// topology "block" (the same content as topology.conf for each plugin).
// The topology of o.Plugin is cluster_default; a partition picks another
// with Topology= on its PartitionName line. The header says, for each
// partition of the cluster file, which one fits it: block when all its
// nodes are in blocks (an NVL72 partition), else tree, since topology/block
// gives nodes outside every block no topology at all.
//
// Why both rather than one per partition: the two describe the same
// nodes, and a partition's topology is Slurm's choice to make in
// slurm.conf; gangtopo's own placement reads the cluster file either way.
func topologyYAML(w io.Writer, c *topology.Cluster, o TopologyOptions) ([]string, error) {
	sws, err := treeSwitches(c, o.Root)
	if err != nil {
		return nil, err
	}
	var bs *blockSet
	if len(c.ByTier[topology.TierBlock]) > 0 {
		b, err := blocksOf(c)
		if err != nil {
			return nil, err
		}
		bs = &b
	} else if o.Plugin == PluginBlock {
		return nil, fmt.Errorf("cluster %s has no blocks, so a block topology cannot be the default; use --plugin tree", c.Name)
	}
	var b strings.Builder
	b.WriteString(header(c, "topology.yaml (Slurm 25.05+)"))
	b.WriteString("# slurm.conf, one topology per partition (cluster_default: the others):\n")
	for _, line := range partitionHints(c, bs) {
		b.WriteString("#   " + line + "\n")
	}
	b.WriteString("---\n")
	writeTreeYAML(&b, sws, o.Plugin == PluginTree)
	if bs != nil {
		writeBlockYAML(&b, bs, o.Plugin == PluginBlock)
	}
	_, err = io.WriteString(w, b.String())
	return nil, err
}

// partitionHints says which topology fits each partition of the cluster
// file, as the PartitionName option that selects it.
func partitionHints(c *topology.Cluster, bs *blockSet) []string {
	var out []string
	for pi, name := range c.Partitions {
		all, any := true, false
		for i := range c.Nodes {
			for _, p := range c.Nodes[i].Partitions {
				if p != pi {
					continue
				}
				any = true
				if bs == nil || !bs.inBlock[topology.NodeID(i)] {
					all = false
				}
			}
		}
		topo := yamlTree
		if any && all {
			topo = yamlBlock
		}
		out = append(out, fmt.Sprintf("PartitionName=%s ... Topology=%s", name, topo))
	}
	return out
}

func writeTreeYAML(b *strings.Builder, sws []switchEntry, def bool) {
	fmt.Fprintf(b, "- topology: %s\n  cluster_default: %t\n  tree:\n    switches:\n", yamlTree, def)
	for _, sw := range sws {
		fmt.Fprintf(b, "      - switch: %s\n", sw.name)
		if sw.nodes != "" {
			fmt.Fprintf(b, "        nodes: %q\n", sw.nodes)
		} else {
			fmt.Fprintf(b, "        children: %q\n", sw.switches)
		}
	}
}

func writeBlockYAML(b *strings.Builder, bs *blockSet, def bool) {
	fmt.Fprintf(b, "- topology: %s\n  cluster_default: %t\n  block:\n    block_sizes:\n", yamlBlock, def)
	for _, s := range bs.sizes {
		fmt.Fprintf(b, "      - %d\n", s)
	}
	b.WriteString("    blocks:\n")
	for _, bl := range bs.blocks {
		fmt.Fprintf(b, "      - block: %s\n        nodes: %q\n", bl.name, bl.nodes)
	}
}
