package topology

// Subset is the part of spec that holds the nodes keep accepts: the same
// switches, blocks, speeds and oversubscription, less every node left
// out and every block, leaf and spine left empty. A statically
// partitioned cluster is one Subset per partition. name names the
// result.
func (s Spec) Subset(name string, keep func(node string) bool) Spec {
	out := Spec{Name: name, At: s.At}
	for _, n := range s.Nodes {
		if keep(n.Name) {
			out.Nodes = append(out.Nodes, n)
		}
	}
	out.Leaves = subsetLeaves(s.Leaves, keep)
	for _, sp := range s.Spines {
		if ls := subsetLeaves(sp.Leaves, keep); len(ls) > 0 {
			sp.Leaves = ls
			out.Spines = append(out.Spines, sp)
		}
	}
	return out
}

// subsetLeaves keeps the leaves (and their blocks) with a node keep
// accepts, holding only those nodes.
func subsetLeaves(leaves []LeafSpec, keep func(string) bool) []LeafSpec {
	var out []LeafSpec
	for _, l := range leaves {
		l.Nodes = keepNames(l.Nodes, keep)
		var blocks []BlockSpec
		for _, b := range l.Blocks {
			if b.Nodes = keepNames(b.Nodes, keep); len(b.Nodes) > 0 {
				blocks = append(blocks, b)
			}
		}
		l.Blocks = blocks
		if len(l.Nodes) > 0 || len(l.Blocks) > 0 {
			out = append(out, l)
		}
	}
	return out
}

func keepNames(names []string, keep func(string) bool) []string {
	var out []string
	for _, n := range names {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}
