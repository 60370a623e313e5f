package jobsubmit

import (
	"fmt"
	"regexp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// DefaultFeaturePrefix starts every node feature gangtopo relies on; it is
// the prefix `gangtopo gen features` writes (cmd/gangtopo/internal/slurmgen).
const DefaultFeaturePrefix = "gt_"

// featureName is what a Slurm node feature may hold, as slurmgen checks it.
var featureName = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

// ValidFeature says whether s may be (part of) a Slurm node feature name:
// letters, digits and _ . + - only.
func ValidFeature(s string) bool { return featureName.MatchString(s) }

// featureTiers are the tiers whose domains become Slurm node features: the
// multi-node domains a gang can be bound to, and the node itself, which a
// one-node job is bound to by rank (nodebind.go). NVLink islands need no
// feature (an island is inside one node).
var featureTiers = []topology.Tier{topology.TierSpine, topology.TierLeaf, topology.TierBlock, topology.TierNode}

// DomainFeature is the Slurm node feature that marks membership of a
// domain: the prefix and the domain's name as the cluster file spells it
// ("leaf1" -> "gt_leaf1"), exactly what `gangtopo gen features` writes.
func DomainFeature(prefix, domain string) string { return prefix + domain }

// NodeFeatures lists, for every node of c, the features of the domains above
// it and its own (spine, leaf, block, node, in that order). It fails when a domain's name
// cannot be a Slurm feature.
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

// checkFeatureNames refuses domain names Slurm cannot take as features.
func checkFeatureNames(c *topology.Cluster, prefix string) error {
	for _, t := range featureTiers {
		for _, id := range c.ByTier[t] {
			if name := c.Domains[id].Name; !featureName.MatchString(DomainFeature(prefix, name)) {
				return fmt.Errorf("%s %q cannot be a Slurm node feature (allowed: letters, digits and _ . + -): rename it in the cluster file", t, name)
			}
		}
	}
	return nil
}
