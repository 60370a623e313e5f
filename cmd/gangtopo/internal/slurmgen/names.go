package slurmgen

import (
	"fmt"
	"regexp"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// slurmName is what this package lets through as a Slurm switch, block or
// feature name: no spaces, commas, colons or the feature-expression
// operators |&[]*(), which Slurm would read as syntax.
var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

func checkName(kind, name string) error {
	if !slurmName.MatchString(name) {
		return fmt.Errorf("%s name %q cannot be used in Slurm configuration (allowed: letters, digits and _ . + -)", kind, name)
	}
	return nil
}

// nodeNames returns the names of the nodes in [lo, hi).
func nodeNames(c *topology.Cluster, lo, hi topology.NodeID) []string {
	out := make([]string, 0, hi-lo)
	for n := lo; n < hi; n++ {
		out = append(out, c.Nodes[n].Name)
	}
	return out
}

// group collects nodes that share a key, in order of first appearance, so
// each group can be written as one line with a compressed host list.
type group struct {
	key   string
	nodes []string
}

func groupNodes(c *topology.Cluster, key func(n *topology.Node) string) []group {
	var out []group
	at := map[string]int{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		k := key(n)
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, group{key: k})
		}
		out[j].nodes = append(out[j].nodes, n.Name)
	}
	return out
}

func hosts(names []string) string { return hostlist.Compress(names) }
