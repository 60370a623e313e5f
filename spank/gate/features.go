package gate

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// DefaultFeaturePrefix starts every node feature gangtopo relies on.
const DefaultFeaturePrefix = "gt_"

// featureTiers are the tiers whose domains become Slurm node features: the
// multi-node domains a gang can be bound to. Nodes and NVLink islands need
// no feature (a node is named directly; an island is inside one node).
var featureTiers = []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine}

// DomainFeature is the Slurm node feature that marks membership of domain d:
// the prefix and the domain's name, lower case, with every character Slurm
// does not allow in a feature name replaced by '_' ("leaf1" -> "gt_leaf1",
// "rack-A.3" -> "gt_rack_a_3").
func DomainFeature(prefix, domain string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(domain) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// NodeFeatures lists, for every node of c, the features of the domains above
// it (block, leaf, spine, in that order), as slurm.conf's Feature= wants
// them. It fails when two domains map to the same feature name.
func NodeFeatures(c *topology.Cluster, prefix string) ([][]string, error) {
	if err := checkFeatureNames(c, prefix); err != nil {
		return nil, err
	}
	out := make([][]string, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		for _, t := range featureTiers {
			if d := n.Up[t]; d != topology.NoDomain {
				out[i] = append(out[i], DomainFeature(prefix, c.Domains[d].Name))
			}
		}
	}
	return out, nil
}

// checkFeatureNames makes sure no two feature-bearing domains share a
// feature name after sanitising.
func checkFeatureNames(c *topology.Cluster, prefix string) error {
	seen := map[string]string{}
	for _, t := range featureTiers {
		for _, id := range c.ByTier[t] {
			name := c.Domains[id].Name
			f := DomainFeature(prefix, name)
			if other, dup := seen[f]; dup {
				return fmt.Errorf("domains %q and %q both map to node feature %q: rename one in the cluster file", other, name, f)
			}
			seen[f] = name
		}
	}
	return nil
}
