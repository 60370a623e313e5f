package topobuild

import (
	"fmt"
	"sort"
	"strings"
)

// Switch is one switch of a fabric as a topology source describes it.
type Switch struct {
	Name     string
	At       string   // where it was declared ("topology.conf:3")
	Nodes    []string // hosts directly below it: a leaf
	Children []string // switches directly below it
	Comment  string   // what the source said about it (ibnetdiscover GUID, description)
}

// SwitchTree is a fabric: its switches in source order. Leaves are the
// switches with nodes.
type SwitchTree struct {
	Source   string
	Switches []Switch
}

// Leaf is a leaf domain of the cluster and the spine it belongs to ("" when
// the cluster has no spine tier).
type Leaf struct {
	Name    string
	At      string
	Comment string
	Spine   string
	Nodes   []string
}

// Leaves maps the switch tree onto gangtopo's two switch tiers.
//
// A leaf is a switch with nodes. Its spine is decided by its parents: leaves
// with the same set of parent switches form one spine domain, named after
// the parent (or the parents joined by "-" when a leaf hangs from several, as
// in a fat tree that lists every leaf under every spine). When every leaf
// has the same parents (a single top switch, or a two-level fat tree where
// each leaf reaches every spine), the spine tier tells nothing apart and is
// left out. Levels above the leaves' parents are not modelled: gangtopo's
// tree is spine > leaf, and the parent is the tighter grouping.
func (t *SwitchTree) Leaves() []Leaf {
	parents := map[string][]string{}
	for _, s := range t.Switches {
		for _, c := range s.Children {
			parents[c] = append(parents[c], s.Name)
		}
	}
	var leaves []Leaf
	groups := map[string]bool{}
	for _, s := range t.Switches {
		if len(s.Nodes) == 0 {
			continue
		}
		ps := append([]string(nil), parents[s.Name]...)
		sort.Strings(ps)
		spine := strings.Join(ps, "-")
		groups[spine] = true
		leaves = append(leaves, Leaf{Name: s.Name, At: s.At, Comment: s.Comment, Spine: spine, Nodes: s.Nodes})
	}
	if len(groups) <= 1 {
		for i := range leaves {
			leaves[i].Spine = ""
		}
	}
	return leaves
}

// check reports structural mistakes: duplicate names, undefined children,
// a node under two leaves, cycles.
func (t *SwitchTree) check() error {
	at := map[string]string{}
	for _, s := range t.Switches {
		if prev, dup := at[s.Name]; dup {
			return fmt.Errorf("%s: switch %s is already defined at %s", s.At, s.Name, prev)
		}
		at[s.Name] = s.At
	}
	leafOf := map[string]string{}
	for _, s := range t.Switches {
		for _, c := range s.Children {
			if _, ok := at[c]; !ok {
				return fmt.Errorf("%s: switch %s lists child switch %s, which is not defined", s.At, s.Name, c)
			}
		}
		for _, n := range s.Nodes {
			if prev, dup := leafOf[n]; dup {
				return fmt.Errorf("%s: node %s is under two leaf switches, %s and %s (gangtopo needs one leaf per node)", s.At, n, prev, s.Name)
			}
			leafOf[n] = s.Name
		}
	}
	if len(leafOf) == 0 {
		return fmt.Errorf("%s: no switch has nodes (want lines such as SwitchName=leaf1 Nodes=node[01-04])", t.Source)
	}
	return t.checkCycles()
}

func (t *SwitchTree) checkCycles() error {
	children := map[string][]string{}
	for _, s := range t.Switches {
		children[s.Name] = s.Children
	}
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case active:
			return fmt.Errorf("%s: switches form a cycle: %s", t.Source, strings.Join(append(path, n), " > "))
		case done:
			return nil
		}
		state[n] = active
		for _, c := range children[n] {
			if err := visit(c, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = done
		return nil
	}
	for _, s := range t.Switches {
		if err := visit(s.Name, nil); err != nil {
			return err
		}
	}
	return nil
}
