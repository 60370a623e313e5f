package slurmgen

import (
	"fmt"
	"io"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// The topology plugins TopologyConf can write for.
const (
	PluginTree  = "tree"  // topology/tree: every Slurm release (22.05 here)
	PluginBlock = "block" // topology/block: Slurm 23.11 and later
)

// TopologyOptions tunes TopologyConf.
type TopologyOptions struct {
	// Plugin is PluginTree (default) or PluginBlock.
	Plugin string
	// Root names the switch written above the top-level switches when there
	// are several, so jobs may span them (default "top").
	Root string
}

// TopologyConf writes topology.conf for the cluster.
//
// Tree: one SwitchName line per switch, leaves first. An NVLink block
// becomes a switch of its own under its leaf, so stock Slurm's best-fit
// also prefers to keep a job inside a rack; a leaf that holds loose nodes
// as well as blocks gets a switch "<leaf>-nodes" for the loose ones,
// because Slurm refuses a switch with both Nodes= and Switches=. When more
// than one switch is left at the top, a root switch joins them: Slurm
// runs no job across switches without a common ancestor.
//
// Block (Slurm 23.11+): one BlockName line per block and BlockSizes= with
// the smallest block's node count as the base size (Slurm stops if a later
// block is smaller than the base), doubling up to all blocks. topology/block
// reads no SwitchName lines, so leaves and spines are not written; nodes
// outside every block are reported as a warning, since that plugin gives
// them no topology at all.
func TopologyConf(w io.Writer, c *topology.Cluster, o TopologyOptions) ([]string, error) {
	if o.Root == "" {
		o.Root = "top"
	}
	var lines []string
	var warns []string
	var err error
	switch o.Plugin {
	case "", PluginTree:
		lines, err = treeLines(c, o.Root)
	case PluginBlock:
		lines, warns, err = blockLines(c)
	default:
		return nil, fmt.Errorf("unknown topology plugin %q (want %s or %s)", o.Plugin, PluginTree, PluginBlock)
	}
	if err != nil {
		return nil, err
	}
	_, err = io.WriteString(w, header(c, "topology.conf, TopologyPlugin=topology/"+pluginName(o.Plugin))+strings.Join(lines, "\n")+"\n")
	return warns, err
}

func pluginName(p string) string {
	if p == "" {
		return PluginTree
	}
	return p
}

func header(c *topology.Cluster, what string) string {
	return fmt.Sprintf("# %s for cluster %s (%d nodes, %d GPUs), written by gangtopo\n# from its cluster file. Regenerate it rather than editing it.\n", what, c.Name, len(c.Nodes), c.NumGPUs())
}

func treeLines(c *topology.Cluster, root string) ([]string, error) {
	var lines []string
	for _, l := range c.ByTier[topology.TierLeaf] {
		ls, err := leafLines(c, &c.Domains[l])
		if err != nil {
			return nil, err
		}
		lines = append(lines, ls...)
	}
	for _, s := range c.ByTier[topology.TierSpine] {
		d := &c.Domains[s]
		if err := checkName("spine", d.Name); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("SwitchName=%s Switches=%s", d.Name, hosts(childNames(c, d))))
	}
	top := childNames(c, &c.Domains[0])
	if len(top) > 1 {
		if _, taken := c.DomainByName(root); taken {
			return nil, fmt.Errorf("root switch name %q is already a switch, block or node of the cluster; choose another with --root", root)
		}
		if _, taken := c.NodeByName(root); taken {
			return nil, fmt.Errorf("root switch name %q is already a node of the cluster; choose another with --root", root)
		}
		lines = append(lines, fmt.Sprintf("SwitchName=%s Switches=%s", root, hosts(top)))
	}
	return lines, nil
}

// leafLines writes a leaf and its blocks (see TopologyConf).
func leafLines(c *topology.Cluster, leaf *topology.Domain) ([]string, error) {
	if err := checkName("leaf", leaf.Name); err != nil {
		return nil, err
	}
	var loose, blocks []string
	var lines []string
	for _, ch := range leaf.Children {
		d := &c.Domains[ch]
		switch d.Tier {
		case topology.TierNode:
			loose = append(loose, d.Name)
		case topology.TierBlock:
			if err := checkName("block", d.Name); err != nil {
				return nil, err
			}
			blocks = append(blocks, d.Name)
			lines = append(lines, fmt.Sprintf("SwitchName=%s Nodes=%s", d.Name, hosts(nodeNames(c, d.NodeLo, d.NodeHi))))
		}
	}
	switch {
	case len(blocks) == 0:
		return []string{fmt.Sprintf("SwitchName=%s Nodes=%s", leaf.Name, hosts(loose))}, nil
	case len(loose) > 0:
		extra := leaf.Name + "-nodes"
		if _, taken := c.DomainByName(extra); taken {
			return nil, fmt.Errorf("leaf %s has loose nodes and blocks, and the name %s for its loose-node switch is taken", leaf.Name, extra)
		}
		lines = append(lines, fmt.Sprintf("SwitchName=%s Nodes=%s", extra, hosts(loose)))
		blocks = append([]string{extra}, blocks...)
	}
	return append(lines, fmt.Sprintf("SwitchName=%s Switches=%s", leaf.Name, hosts(blocks))), nil
}

func childNames(c *topology.Cluster, d *topology.Domain) []string {
	var out []string
	for _, ch := range d.Children {
		out = append(out, c.Domains[ch].Name)
	}
	return out
}

func blockLines(c *topology.Cluster) ([]string, []string, error) {
	blocks := c.ByTier[topology.TierBlock]
	if len(blocks) == 0 {
		return nil, nil, fmt.Errorf("cluster %s has no blocks, so topology/block has nothing to describe; use the tree plugin", c.Name)
	}
	base := 0
	var lines []string
	inBlock := map[topology.NodeID]bool{}
	for _, b := range blocks {
		d := &c.Domains[b]
		if err := checkName("block", d.Name); err != nil {
			return nil, nil, err
		}
		lines = append(lines, fmt.Sprintf("BlockName=%s Nodes=%s", d.Name, hosts(nodeNames(c, d.NodeLo, d.NodeHi))))
		if base == 0 || d.NumNodes() < base {
			base = d.NumNodes()
		}
		for n := d.NodeLo; n < d.NodeHi; n++ {
			inBlock[n] = true
		}
	}
	var sizes []string
	for s := base; s <= base*len(blocks); s *= 2 {
		sizes = append(sizes, fmt.Sprint(s))
	}
	lines = append(lines, "BlockSizes="+strings.Join(sizes, ","))
	var outside []string
	for i := range c.Nodes {
		if !inBlock[topology.NodeID(i)] {
			outside = append(outside, c.Nodes[i].Name)
		}
	}
	var warns []string
	if len(outside) > 0 {
		warns = append(warns, fmt.Sprintf("%d nodes are in no block and get no topology under topology/block: %s", len(outside), hosts(outside)))
	}
	return lines, warns, nil
}
