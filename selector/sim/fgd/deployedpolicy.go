package fgd

import (
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/sim/deployed"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
)

// deployedPolicy is gangtopo as a cluster runs it (selector/sim/deployed):
// each pod is submitted as the job a Slurm user would write for it, the
// plugin's decision rewrites it (jobs: all, so CPU-only pods too), and
// stock Slurm (the slurm policy's model) places the rewritten job. A pod
// the plugin refuses, or Slurm cannot start now, fails.
type deployedPolicy struct {
	p      *deployed.Path
	prefix string
}

func newDeployed(env *Env) (Policy, error) {
	pol := jobsubmit.DefaultPolicy()
	pol.Jobs = jobsubmit.ScopeAll
	w := env.Workload.Typical
	p, err := deployed.New(env.Cluster, deployed.Config{Policy: pol, Slurm: stockslurm.Options{Tree: true}, Workload: &w})
	if err != nil {
		return nil, err
	}
	return &deployedPolicy{p: p, prefix: pol.FeaturePrefix}, nil
}

func (d *deployedPolicy) Name() string { return "gangtopo-slurm" }

func (d *deployedPolicy) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	job, err := deployed.SbatchJob(&j.Req, d.prefix)
	if err != nil {
		return occupancy.Allocation{}, false
	}
	res, err := d.p.Submit(s, job)
	if err != nil || res.Action == jobsubmit.Reject {
		return occupancy.Allocation{}, false
	}
	a, ok, err := d.p.Start(s, deployed.Apply(job, res), &deployed.Resources{CPUMilli: j.CPUMilli, MemMiB: j.MemMiB})
	return a, ok && err == nil
}
