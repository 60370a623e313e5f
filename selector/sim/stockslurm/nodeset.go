package stockslurm

import (
	"slices"
	"sync"

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

// Nodes' features never change within a Model, and the replays place the
// same constraint expressions (a pending job's binding) at every
// scheduling pass, so each expression is parsed, and which nodes match
// each of its alternatives worked out, once and kept, up to
// maxMatchCells node-alternative cells in all (then the set is emptied
// and refilled): matching feature names in maps was an eighth of a
// replay with spares.
const maxMatchCells = 1 << 24

// matchSets keeps, by constraint expression, the nodes (by Slurm index)
// each matching-OR alternative of it allows. Safe for concurrent use.
type matchSets struct {
	mu    sync.Mutex
	m     map[string][][]bool
	cells int // node-alternative cells held in m
}

// matching is, for each alternative of the constraint expression expr,
// the nodes whose features satisfy it; an error when expr does not parse.
func (m *Model) matching(expr string) ([][]bool, error) {
	m.matches.mu.Lock()
	sets, ok := m.matches.m[expr]
	m.matches.mu.Unlock()
	if ok {
		return sets, nil
	}
	c, err := parseConstraint(expr)
	if err != nil {
		return nil, err
	}
	sets = make([][]bool, c.passes())
	for alt := range sets {
		sets[alt] = make([]bool, len(m.feat))
		for i := range m.feat {
			sets[alt][i] = c.match(m.feat[i], alt)
		}
	}
	cells := len(sets) * len(m.feat)
	m.matches.mu.Lock()
	if m.matches.m == nil || m.matches.cells+cells > maxMatchCells {
		m.matches.m, m.matches.cells = map[string][][]bool{}, 0
	}
	m.matches.m[expr] = sets
	m.matches.cells += cells
	m.matches.mu.Unlock()
	return sets, nil
}

// maskOf writes into mask the nodes of base that match; it reports
// whether any does.
func maskOf(match, base, mask []bool) bool {
	found := false
	for i := range mask {
		mask[i] = base[i] && match[i]
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
