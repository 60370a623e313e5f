package fgd

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
)

// slurmPolicy is stock Slurm 22.05 (cons_tres with topology/tree) as
// selector/sim/stockslurm models it, checked against a real slurmctld. A pod is
// the job a stock Slurm user would submit for it: --gpus=G -N 1 with
// --cpus-per-gpu, a share as one gres/shard, a CPU-only pod as one task
// with its CPUs (stockslurm.FromRequest).
type slurmPolicy struct{ m *stockslurm.Model }

func newSlurm(env *Env) (Policy, error) {
	return slurmPolicy{stockslurm.NewTree(env.Cluster)}, nil
}

func (p slurmPolicy) Name() string { return p.m.Name() }

func (p slurmPolicy) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	return p.m.Place(s, &j.Req)
}
