package frag

import (
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Degraded is a domain with failed members: nodes that take no new jobs
// (down, drained, failing, or not reported). Until they are repaired it
// holds gangs only as large as its healthy part, which is the size the
// plugin's bindings rank it by (jobsubmit, rankedDomains).
type Degraded struct {
	Tier    topology.Tier `json:"tier"`
	Domain  string        `json:"domain"`
	Nodes   int           `json:"nodes"`
	Healthy int           `json:"healthy"`
	// Failed names the failed nodes (a host list).
	Failed string `json:"failed"`
}

// degradedTiers are the tiers whose domains are listed: those that hold
// multi-node gangs (a node's own failure is its nodes' state).
var degradedTiers = []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine}

// DegradedDomains lists the blocks, leaves and spines of s's cluster with
// a failed member, in tier then tree order.
func DegradedDomains(s *occupancy.Snapshot) []Degraded {
	c := s.Cluster
	var out []Degraded
	for _, t := range degradedTiers {
		for _, d := range c.ByTier[t] {
			dom := &c.Domains[d]
			var failed []string
			for n := dom.NodeLo; n < dom.NodeHi; n++ {
				if !s.State[n].Usable() {
					failed = append(failed, c.Nodes[n].Name)
				}
			}
			if len(failed) == 0 {
				continue
			}
			out = append(out, Degraded{Tier: t, Domain: dom.Name, Nodes: dom.NumNodes(),
				Healthy: dom.NumNodes() - len(failed), Failed: hostlist.Compress(failed)})
		}
	}
	return out
}
