package topology

import (
	"fmt"
	"strings"
)

// Tier is the level of a domain in the tree, from the tightest (an NVLink
// island) to the whole cluster. The numeric order is the containment order:
// a domain of tier t only contains domains of lower tiers.
type Tier uint8

// The tiers, tightest first.
const (
	TierNVLink  Tier = iota + 1 // GPUs joined by NVLink/NVSwitch (inside a node, or a whole block)
	TierNode                    // one server
	TierBlock                   // a multi-node NVLink domain, e.g. an NVL72 rack (optional)
	TierLeaf                    // the nodes under one IB/RoCE leaf switch
	TierSpine                   // the leaves under one spine (optional)
	TierCluster                 // everything; a request for tier "any"
)

// NumTiers sizes arrays indexed by Tier.
const NumTiers = int(TierCluster) + 1

var tierNames = [NumTiers]string{"", "nvlink", "node", "block", "leaf", "spine", "any"}

// String returns the tier's name as users write it ("any" for the cluster).
func (t Tier) String() string {
	if int(t) < NumTiers && t > 0 {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// Tiers lists every tier, tightest first.
func Tiers() []Tier {
	return []Tier{TierNVLink, TierNode, TierBlock, TierLeaf, TierSpine, TierCluster}
}

// TierNames is the list of valid tier names, for error messages.
func TierNames() string {
	return strings.Join(tierNames[1:], ", ")
}

// ParseTier reads a tier name. "cluster" is accepted as a synonym of "any".
func ParseTier(s string) (Tier, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "cluster" {
		return TierCluster, nil
	}
	for i, n := range tierNames {
		if i > 0 && n == s {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("unknown tier %q (want one of %s)", s, TierNames())
}

// MarshalText implements encoding.TextMarshaler.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *Tier) UnmarshalText(b []byte) error {
	v, err := ParseTier(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
