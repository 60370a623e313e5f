package ctld

import (
	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// spares reads the spares: section into the policy's Spares
// (selector/jobsubmit/spares.go; docs/admin.md, "Spare nodes"):
//
//	spares:
//	  tier: leaf            # leaf, block or spine: the domains that keep spares
//	  per_domain: 1         # nodes kept in each (0: none)
//	  lend_partitions: [scavenger]  # jobs there may use spares meanwhile ...
//	  lend_max_gpus: 2      # ... when they ask at most this many GPUs
//
// Whether the cluster has the tier is checked where the cluster file is
// read (jobsubmit.New).
func (p *configParser) spares(v *yaml.Node, key string) {
	s := &p.c.Spares
	var tier string
	p.section(v, key, map[string]func(*yaml.Node, string){
		"tier":            func(v *yaml.Node, k string) { p.enum(v, k, &tier, "leaf", "block", "spine") },
		"per_domain":      func(v *yaml.Node, k string) { p.count(v, k, 0, 64, &s.PerDomain) },
		"lend_partitions": func(v *yaml.Node, k string) { p.names(v, k, "partition", &s.LendPartitions) },
		"lend_max_gpus":   func(v *yaml.Node, k string) { p.count(v, k, 1, 1<<20, &s.LendMaxGPUs) },
	})
	if tier != "" {
		s.Tier, _ = topology.ParseTier(tier)
	}
	switch {
	case len(s.LendPartitions) > 0 && s.LendMaxGPUs == 0:
		p.errorf(v, key+".lend_max_gpus", "missing: lend_partitions lends spares only to jobs of at most lend_max_gpus GPUs (e.g. 2)")
	case len(s.LendPartitions) == 0 && s.LendMaxGPUs > 0:
		p.errorf(v, key+".lend_partitions", "missing: lend_max_gpus says how large a lent job may be; lend_partitions, which partitions lend (ones Slurm preempts)")
	}
}

// checkSpares refuses spares that would not hold: under jobs: gang a job
// without --gang-topology is left to Slurm, which may start it on a spare.
func (p *configParser) checkSpares(root *yaml.Node) {
	if p.c.Spares.On() && p.c.Jobs == jobsubmit.ScopeGang {
		p.errorf(root, "spares", "per_domain %d with jobs: gang: jobs without --gang-topology are left to Slurm and may take the spares; set jobs: gpu (or all)", p.c.Spares.PerDomain)
	}
}
