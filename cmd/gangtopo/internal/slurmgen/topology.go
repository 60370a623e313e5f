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
	// Plugin is PluginTree (default) or PluginBlock. For FormatYAML it
	// names the topology that is the cluster's default.
	Plugin string
	// Format is FormatConf (default) or FormatYAML.
	Format string
	// Root names the switch written above the top-level switches when there
	// are several, so jobs may span them (default "top").
	Root string
}

// The files TopologyConf can write.
const (
	FormatConf = "topology.conf" // one plugin, any Slurm release
	FormatYAML = "topology.yaml" // a topology per partition, Slurm 25.05 and later
)

// TopologyConf writes topology.conf (or topology.yaml) for the cluster.
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
// block is smaller than the base), doubling until one size holds every
// block. topology/block reads no SwitchName lines, so leaves and spines are
// not written; nodes outside every block are reported as a warning, since
// that plugin gives them no topology at all.
//
// topology.yaml (Slurm 25.05+, topologyyaml.go): both, as two named
// topologies, so each partition can use the one that fits it.
func TopologyConf(w io.Writer, c *topology.Cluster, o TopologyOptions) ([]string, error) {
	if o.Root == "" {
		o.Root = "top"
	}
	if o.Plugin == "" {
		o.Plugin = PluginTree
	}
	if o.Plugin != PluginTree && o.Plugin != PluginBlock {
		return nil, fmt.Errorf("unknown topology plugin %q (want %s or %s)", o.Plugin, PluginTree, PluginBlock)
	}
	switch o.Format {
	case "", FormatConf:
		return topologyConf(w, c, o)
	case FormatYAML:
		return topologyYAML(w, c, o)
	}
	return nil, fmt.Errorf("unknown topology file format %q (want %s or %s)", o.Format, FormatConf, FormatYAML)
}

// topologyConf writes topology.conf for one plugin.
func topologyConf(w io.Writer, c *topology.Cluster, o TopologyOptions) ([]string, error) {
	var lines, warns []string
	if o.Plugin == PluginBlock {
		bs, err := blocksOf(c)
		if err != nil {
			return nil, err
		}
		for _, b := range bs.blocks {
			lines = append(lines, fmt.Sprintf("BlockName=%s Nodes=%s", b.name, b.nodes))
		}
		lines = append(lines, "BlockSizes="+joinInts(bs.sizes, ","))
		warns = bs.warns
	} else {
		sws, err := treeSwitches(c, o.Root)
		if err != nil {
			return nil, err
		}
		for _, sw := range sws {
			if sw.nodes != "" {
				lines = append(lines, fmt.Sprintf("SwitchName=%s Nodes=%s", sw.name, sw.nodes))
			} else {
				lines = append(lines, fmt.Sprintf("SwitchName=%s Switches=%s", sw.name, sw.switches))
			}
		}
	}
	_, err := io.WriteString(w, header(c, "topology.conf, TopologyPlugin=topology/"+o.Plugin)+strings.Join(lines, "\n")+"\n")
	return warns, err
}

func header(c *topology.Cluster, what string) string {
	return fmt.Sprintf("# %s for cluster %s (%d nodes, %d GPUs), written by gangtopo\n# from its cluster file. Regenerate it rather than editing it.\n", what, c.Name, len(c.Nodes), c.NumGPUs())
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}

// switchEntry is one switch of topology/tree: nodes (a host list) for a
// leaf switch, switches (a host list of switch names) above.
type switchEntry struct {
	name, nodes, switches string
}

// treeSwitches lists the switches of topology/tree, leaves first (see
// TopologyConf).
func treeSwitches(c *topology.Cluster, root string) ([]switchEntry, error) {
	var out []switchEntry
	for _, l := range c.ByTier[topology.TierLeaf] {
		ls, err := leafSwitches(c, &c.Domains[l])
		if err != nil {
			return nil, err
		}
		out = append(out, ls...)
	}
	for _, s := range c.ByTier[topology.TierSpine] {
		d := &c.Domains[s]
		if err := checkName("spine", d.Name); err != nil {
			return nil, err
		}
		out = append(out, switchEntry{name: d.Name, switches: hosts(childNames(c, d))})
	}
	top := childNames(c, &c.Domains[0])
	if len(top) > 1 {
		if _, taken := c.DomainByName(root); taken {
			return nil, fmt.Errorf("root switch name %q is already a switch, block or node of the cluster; choose another with --root", root)
		}
		if _, taken := c.NodeByName(root); taken {
			return nil, fmt.Errorf("root switch name %q is already a node of the cluster; choose another with --root", root)
		}
		out = append(out, switchEntry{name: root, switches: hosts(top)})
	}
	return out, nil
}

// leafSwitches lists a leaf and its blocks (see TopologyConf).
func leafSwitches(c *topology.Cluster, leaf *topology.Domain) ([]switchEntry, error) {
	if err := checkName("leaf", leaf.Name); err != nil {
		return nil, err
	}
	var loose, blocks []string
	var out []switchEntry
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
			out = append(out, switchEntry{name: d.Name, nodes: hosts(nodeNames(c, d.NodeLo, d.NodeHi))})
		}
	}
	switch {
	case len(blocks) == 0:
		return []switchEntry{{name: leaf.Name, nodes: hosts(loose)}}, nil
	case len(loose) > 0:
		extra := leaf.Name + "-nodes"
		if _, taken := c.DomainByName(extra); taken {
			return nil, fmt.Errorf("leaf %s has loose nodes and blocks, and the name %s for its loose-node switch is taken", leaf.Name, extra)
		}
		out = append(out, switchEntry{name: extra, nodes: hosts(loose)})
		blocks = append([]string{extra}, blocks...)
	}
	return append(out, switchEntry{name: leaf.Name, switches: hosts(blocks)}), nil
}

func childNames(c *topology.Cluster, d *topology.Domain) []string {
	var out []string
	for _, ch := range d.Children {
		out = append(out, c.Domains[ch].Name)
	}
	return out
}

// blockEntry is one block of topology/block.
type blockEntry struct {
	name, nodes string
}

// blockSet is what topology/block is told: the blocks, BlockSizes, and
// the warnings (nodes left out).
type blockSet struct {
	blocks  []blockEntry
	sizes   []int
	inBlock map[topology.NodeID]bool
	warns   []string
}

// blocksOf lists the cluster's blocks for topology/block (see
// TopologyConf). The sizes double from the smallest block's node count
// until one size holds every block: a job may use any block level up to
// the whole set (3 blocks of 18 give 18,36,72).
func blocksOf(c *topology.Cluster) (blockSet, error) {
	ids := c.ByTier[topology.TierBlock]
	if len(ids) == 0 {
		return blockSet{}, fmt.Errorf("cluster %s has no blocks, so topology/block has nothing to describe; use the tree plugin", c.Name)
	}
	bs := blockSet{inBlock: map[topology.NodeID]bool{}}
	base := 0
	for _, b := range ids {
		d := &c.Domains[b]
		if err := checkName("block", d.Name); err != nil {
			return blockSet{}, err
		}
		bs.blocks = append(bs.blocks, blockEntry{name: d.Name, nodes: hosts(nodeNames(c, d.NodeLo, d.NodeHi))})
		if base == 0 || d.NumNodes() < base {
			base = d.NumNodes()
		}
		for n := d.NodeLo; n < d.NodeHi; n++ {
			bs.inBlock[n] = true
		}
	}
	for s := base; ; s *= 2 {
		bs.sizes = append(bs.sizes, s)
		if s >= base*len(ids) {
			break
		}
	}
	var outside []string
	for i := range c.Nodes {
		if !bs.inBlock[topology.NodeID(i)] {
			outside = append(outside, c.Nodes[i].Name)
		}
	}
	if len(outside) > 0 {
		bs.warns = append(bs.warns, fmt.Sprintf("%d nodes are in no block and get no topology under topology/block: %s", len(outside), hosts(outside)))
	}
	return bs, nil
}
