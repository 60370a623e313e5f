package stockslurm

import (
	"slices"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// baseMask marks, by Slurm node index, the nodes the job's partitions and
// node lists allow, before its constraint.
func (m *Model) baseMask(j *Job) []bool {
	mask := make([]bool, len(m.order))
	var allowed, excluded map[string]bool
	if len(j.Allowed) > 0 {
		allowed = setOf(j.Allowed)
	}
	if len(j.Excluded) > 0 {
		excluded = setOf(j.Excluded)
	}
	for i, id := range m.order {
		node := &m.c.Nodes[id]
		switch {
		case len(j.Partitions) > 0 && !inPartitions(m.c, node, j.Partitions):
		case allowed != nil && !allowed[node.Name]:
		case excluded[node.Name]:
		default:
			mask[i] = true
		}
	}
	return mask
}

// featureMask writes into mask the nodes of base that satisfy the
// constraint with matching-OR alternative alt; it reports whether any
// does.
func (m *Model) featureMask(c *constraint, alt int, base, mask []bool) bool {
	found := false
	for i := range mask {
		mask[i] = base[i] && c.match(m.feat[i], alt)
		found = found || mask[i]
	}
	return found
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func inPartitions(c *topology.Cluster, node *topology.Node, parts []string) bool {
	for _, name := range parts {
		if pi, ok := c.PartitionByName(name); ok && slices.Contains(node.Partitions, pi) {
			return true
		}
	}
	return false
}
