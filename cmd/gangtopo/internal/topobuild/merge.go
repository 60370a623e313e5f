package topobuild

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// MergeOptions tunes Merge.
type MergeOptions struct {
	Name       string   // cluster name
	Models     ModelMap // NVML name -> model overrides
	Partitions []string // partitions every node is in
	// RequireAll makes a node of the switch topology without a node map an
	// error. By default it is left out of the cluster with a warning (a
	// node that is down, or an InfiniBand host that is not a Slurm node).
	RequireAll bool
}

// Result is a merged cluster.
type Result struct {
	Spec     topology.Spec
	Comments map[string]string // switch or block name -> where it came from
	Warnings []string
}

// Merge joins node maps with the switch tree into a cluster Spec.
//
// Phases: (1) index the node maps by node; (2) walk the leaves in source
// order and place each node that has a map, collecting those without;
// a map whose node is in no leaf is an error (placement needs its leaf);
// (3) group nodes into blocks by their NVLink fabric clique (cluster UUID
// and clique id), named block01.. in order of first node; a block must
// sit inside one leaf; (4) group leaves into spines; (5) convert each map
// to a NodeSpec in placement order (that order is Slurm's node order), and
// check the whole with topology.Build.
func Merge(maps []*discovery.NodeMap, tree *SwitchTree, opts MergeOptions) (*Result, error) {
	byName := map[string]*discovery.NodeMap{}
	for _, m := range maps {
		if _, dup := byName[m.Node]; dup {
			return nil, fmt.Errorf("two node maps for node %s", m.Node)
		}
		byName[m.Node] = m
	}
	leaves := tree.Leaves()
	if err := checkSpines(leaves); err != nil {
		return nil, err
	}
	res := &Result{Comments: map[string]string{}, Spec: topology.Spec{Name: opts.Name, At: tree.Source}}
	order, placed, missing := placeNodes(leaves, byName)
	if err := checkPlacement(byName, placed, missing, tree.Source, opts.RequireAll, res); err != nil {
		return nil, err
	}
	leafSpecs, err := buildLeaves(leaves, byName, res)
	if err != nil {
		return nil, err
	}
	res.Spec.Spines, res.Spec.Leaves = groupSpines(leaves, leafSpecs)
	for _, s := range tree.Switches {
		if s.Comment != "" && len(s.Children) > 0 {
			res.Comments[s.Name] = s.Comment
		}
	}
	for _, name := range order {
		n, warns, err := NodeSpec(byName[name], opts.Models)
		if err != nil {
			return nil, err
		}
		n.Partitions = opts.Partitions
		res.Spec.Nodes = append(res.Spec.Nodes, n)
		res.Warnings = append(res.Warnings, warns...)
	}
	if _, err := topology.Build(res.Spec); err != nil {
		return nil, fmt.Errorf("the merged cluster is not valid: %w", err)
	}
	return res, nil
}

// placeNodes is phase 2: it keeps in each leaf the nodes that have a map,
// and returns them in placement order, as a set, and the nodes without one.
func placeNodes(leaves []Leaf, byName map[string]*discovery.NodeMap) (order []string, placed map[string]bool, missing []string) {
	placed = map[string]bool{}
	for i := range leaves {
		var kept []string
		for _, n := range leaves[i].Nodes {
			if _, ok := byName[n]; !ok {
				missing = append(missing, n)
				continue
			}
			kept, placed[n] = append(kept, n), true
			order = append(order, n)
		}
		leaves[i].Nodes = kept
	}
	return order, placed, missing
}

// checkSpines refuses a tree where some leaves have a spine and others do
// not: the cluster model puts either every leaf under a spine or none.
func checkSpines(leaves []Leaf) error {
	var with, without []string
	for _, l := range leaves {
		if l.Spine == "" {
			without = append(without, l.Name)
		} else {
			with = append(with, l.Name)
		}
	}
	if len(with) > 0 && len(without) > 0 {
		return fmt.Errorf("leaf switches %s have no parent switch while %s do; put every leaf under a switch (or none)", strings.Join(without, ", "), strings.Join(with, ", "))
	}
	return nil
}

func checkPlacement(byName map[string]*discovery.NodeMap, placed map[string]bool, missing []string, source string, requireAll bool, res *Result) error {
	var stray []string
	for n := range byName {
		if !placed[n] {
			stray = append(stray, n)
		}
	}
	if len(stray) > 0 {
		sort.Strings(stray)
		return fmt.Errorf("node maps for nodes that %s puts under no leaf switch: %s (placement needs every node's leaf)", source, hostlist.Compress(stray))
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d nodes of %s have no node map and are left out of the cluster: %s", len(missing), source, hostlist.Compress(missing))
	if requireAll {
		return fmt.Errorf("%s (every node must publish a node map)", msg)
	}
	res.Warnings = append(res.Warnings, msg)
	return nil
}

// buildLeaves is phase 3: each leaf's loose nodes and NVLink blocks.
func buildLeaves(leaves []Leaf, byName map[string]*discovery.NodeMap, res *Result) ([]topology.LeafSpec, error) {
	blockName := map[string]string{} // fabric domain -> block name
	blockLeaf := map[string]string{} // block name -> its leaf
	var out []topology.LeafSpec
	for _, l := range leaves {
		ls := topology.LeafSpec{Name: l.Name, At: l.At}
		at := map[string]int{} // block name -> index in ls.Blocks
		for _, n := range l.Nodes {
			f := byName[n].Fabric
			if f == nil {
				ls.Nodes = append(ls.Nodes, n)
				continue
			}
			b, ok := blockName[f.Domain()]
			if !ok {
				b = fmt.Sprintf("block%02d", len(blockName)+1)
				blockName[f.Domain()], blockLeaf[b] = b, l.Name
				res.Comments[b] = "NVLink fabric " + f.Domain()
			}
			if blockLeaf[b] != l.Name {
				return nil, fmt.Errorf("NVLink block %s (fabric %s) has nodes under leaf %s and leaf %s, e.g. %s; gangtopo needs each block inside one leaf", b, f.Domain(), blockLeaf[b], l.Name, n)
			}
			if _, ok := at[b]; !ok {
				at[b] = len(ls.Blocks)
				ls.Blocks = append(ls.Blocks, topology.BlockSpec{Name: b, At: l.At, NVLink: true})
			}
			ls.Blocks[at[b]].Nodes = append(ls.Blocks[at[b]].Nodes, n)
		}
		ls = dropLoneBlocks(ls, res)
		if len(ls.Nodes) == 0 && len(ls.Blocks) == 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("leaf %s has no node with a node map; left out", l.Name))
			continue
		}
		if l.Comment != "" {
			res.Comments[l.Name] = l.Comment
		}
		out = append(out, ls)
	}
	return out, nil
}

// dropLoneBlocks turns blocks of one node back into loose nodes of the
// leaf: NVLink inside one node is the node's own island, so such a block
// adds nothing, and single-node HGX boards whose driver reports a fabric
// clique would otherwise each become a block.
func dropLoneBlocks(ls topology.LeafSpec, res *Result) topology.LeafSpec {
	var kept []topology.BlockSpec
	for _, b := range ls.Blocks {
		if len(b.Nodes) > 1 {
			kept = append(kept, b)
			continue
		}
		ls.Nodes = append(ls.Nodes, b.Nodes...)
		res.Warnings = append(res.Warnings, fmt.Sprintf("NVLink fabric %s has one node with a map (%s); no block made", strings.TrimPrefix(res.Comments[b.Name], "NVLink fabric "), b.Nodes[0]))
		delete(res.Comments, b.Name)
	}
	ls.Blocks = kept
	return ls
}

// groupSpines is phase 4: leaves under their spines, in order of first
// leaf, or the leaves alone when the tree has no spine tier.
func groupSpines(leaves []Leaf, specs []topology.LeafSpec) ([]topology.SpineSpec, []topology.LeafSpec) {
	spineOf := map[string]string{}
	for _, l := range leaves {
		spineOf[l.Name] = l.Spine
	}
	var spines []topology.SpineSpec
	index := map[string]int{}
	for _, ls := range specs {
		s := spineOf[ls.Name]
		if s == "" {
			return nil, specs
		}
		i, ok := index[s]
		if !ok {
			i = len(spines)
			index[s] = i
			spines = append(spines, topology.SpineSpec{Name: s, At: ls.At})
		}
		spines[i].Leaves = append(spines[i].Leaves, ls)
	}
	return spines, nil
}
