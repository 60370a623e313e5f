package topology

import (
	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// readTopology reads the `topology:` section: spines with leaves, or leaves
// alone; each leaf lists nodes and/or blocks.
// leaf_oversubscription and spine_oversubscription set the ratio of every
// leaf and spine that does not give its own.
func (f *clusterFile) readTopology(n *yaml.Node, path string) {
	var leafOver, spineOver float64
	f.mapping(n, path, fields{
		"spines": func(v *yaml.Node, p string) {
			f.sequence(v, p, func(v *yaml.Node, p string) { f.spec.Spines = append(f.spec.Spines, f.readSpine(v, p)) })
		},
		"leaves": func(v *yaml.Node, p string) {
			f.sequence(v, p, func(v *yaml.Node, p string) { f.spec.Leaves = append(f.spec.Leaves, f.readLeaf(v, p)) })
		},
		"leaf_oversubscription":  func(v *yaml.Node, p string) { f.number(v, p, checkOversubscription, &leafOver) },
		"spine_oversubscription": func(v *yaml.Node, p string) { f.number(v, p, checkOversubscription, &spineOver) },
	})
	if spineOver > 0 && len(f.spec.Spines) == 0 {
		f.errorf(n, joinPath(path, "spine_oversubscription"), "given, but the topology has no spines")
	}
	setLeaves := func(ls []LeafSpec) {
		for i := range ls {
			if ls[i].Oversubscription == 0 {
				ls[i].Oversubscription = leafOver
			}
		}
	}
	setLeaves(f.spec.Leaves)
	for i := range f.spec.Spines {
		if f.spec.Spines[i].Oversubscription == 0 {
			f.spec.Spines[i].Oversubscription = spineOver
		}
		setLeaves(f.spec.Spines[i].Leaves)
	}
}

func (f *clusterFile) readSpine(n *yaml.Node, path string) SpineSpec {
	s := SpineSpec{At: f.at(n)}
	f.mapping(n, path, fields{
		"name": func(v *yaml.Node, p string) { f.str(v, p, &s.Name) },
		"leaves": func(v *yaml.Node, p string) {
			f.sequence(v, p, func(v *yaml.Node, p string) { s.Leaves = append(s.Leaves, f.readLeaf(v, p)) })
		},
		"oversubscription": func(v *yaml.Node, p string) { f.number(v, p, checkOversubscription, &s.Oversubscription) },
	}, "name", "leaves")
	return s
}

func (f *clusterFile) readLeaf(n *yaml.Node, path string) LeafSpec {
	l := LeafSpec{At: f.at(n)}
	f.mapping(n, path, fields{
		"name":  func(v *yaml.Node, p string) { f.str(v, p, &l.Name) },
		"nodes": func(v *yaml.Node, p string) { l.Nodes = f.hosts(v, p) },
		"blocks": func(v *yaml.Node, p string) {
			f.sequence(v, p, func(v *yaml.Node, p string) { l.Blocks = append(l.Blocks, f.readBlock(v, p)) })
		},
		"oversubscription": func(v *yaml.Node, p string) { f.number(v, p, checkOversubscription, &l.Oversubscription) },
	}, "name")
	return l
}

func (f *clusterFile) readBlock(n *yaml.Node, path string) BlockSpec {
	b := BlockSpec{At: f.at(n), NVLink: true}
	f.mapping(n, path, fields{
		"name":   func(v *yaml.Node, p string) { f.str(v, p, &b.Name) },
		"nodes":  func(v *yaml.Node, p string) { b.Nodes = f.hosts(v, p) },
		"nvlink": func(v *yaml.Node, p string) { f.boolean(v, p, &b.NVLink) },
	}, "name", "nodes")
	return b
}

// hosts reads a host list expression, or a list of them.
func (f *clusterFile) hosts(n *yaml.Node, path string) []string {
	var exprs []string
	if n.Kind == yaml.SequenceNode {
		f.strings(n, path, &exprs)
	} else {
		var s string
		f.str(n, path, &s)
		exprs = []string{s}
	}
	var out []string
	for _, e := range exprs {
		if e == "" {
			continue
		}
		names, err := hostlist.Expand(e)
		if err != nil {
			f.errorf(n, path, "%v", err)
			continue
		}
		out = append(out, names...)
	}
	return out
}
