package main

import (
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Spare nodes in the replay (--spares, the gangtopo-slurm+spares policy):
// the deployed path with gangtopo.yaml's spares: section, so that the
// failures table can set restarts with spares beside those without.

// sparesPolicy is the deployed path keeping --spares.
const sparesPolicy = "gangtopo-slurm+spares"

// parseReplaySpares reads --spares: TIER:N (leaf:1), the spares of the
// sparesPolicy, checked against cluster c.
func parseReplaySpares(v string, c *topology.Cluster) (jobsubmit.Spares, error) {
	tier, n, ok := strings.Cut(v, ":")
	k, err := strconv.Atoi(n)
	if !ok || err != nil || k < 1 {
		return jobsubmit.Spares{}, usagef("--spares %q: want TIER:N, the nodes kept in each domain of the tier (e.g. leaf:1)", v)
	}
	t, err := topology.ParseTier(tier)
	if err != nil {
		return jobsubmit.Spares{}, usagef("--spares %q: %v", v, err)
	}
	s := jobsubmit.Spares{Tier: t, PerDomain: k}
	if err := jobsubmit.CheckSpares(c, s); err != nil {
		return jobsubmit.Spares{}, usagef("--spares %q: %v", v, err)
	}
	return s, nil
}
