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
// the plugin refuses, or Slurm cannot start now, fails. The engine's mix
// is what the controller learns from the jobs it sees running, starting
// from the Philly prior: a new cluster, not one that knows the trace's
// typical pods in advance as the FGD and gangtopo policies do.
type deployedPolicy struct {
	p      *deployed.Path
	prefix string
}

func newDeployed(env *Env) (Policy, error) {
	pol := jobsubmit.DefaultPolicy()
	pol.Jobs = jobsubmit.ScopeAll
	// The mix the controller learns from the jobs it sees running, from
	// the Philly prior on, relearnt every learnEvery pods.
	p, err := deployed.New(env.Cluster, deployed.Config{Policy: pol, Slurm: stockslurm.Options{Tree: true}, LearnEvery: learnEvery})
	if err != nil {
		return nil, err
	}
	return &deployedPolicy{p: p, prefix: pol.FeaturePrefix}, nil
}

// learnEvery is how often, in started pods, the deployed path's engine
// takes the newly learned mix: about every 1.5% of arrivals on the openb
// cluster. Every 5 or 20 pods gave the same figures within 0.03 points
// (default and multigpu40, seeds 42-44), at several times the cost.
const learnEvery = 100

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
	a, ok, err := d.p.Start(s, res.Apply(job), &deployed.Resources{CPUMilli: j.CPUMilli, MemMiB: j.MemMiB})
	if ok && err == nil {
		// The controller learns a job's models from its decision line,
		// not from the job: the same here.
		r := j.Req
		r.Models = res.Decision.Models
		d.p.Started(&r)
	}
	return a, ok && err == nil
}
