// Package defrag plans how to make room for a gang that cannot start: which
// running jobs to requeue (or move) so the whole gang fits inside one domain
// of its tier, at the least cost.
//
// Algorithm, per candidate domain of the request's tier (e.g. every leaf):
//
//  1. collect the running jobs holding GPUs in the domain; a job that also
//     holds GPUs elsewhere counts whole (it would be requeued whole);
//  2. evict them greedily, cheapest per GPU freed inside the domain first
//     (ties: fewest GPUs, then job order), until the engine places the gang
//     inside the domain;
//  3. walk the evicted list backwards and keep each job running if the gang
//     still fits without evicting it (so the set is minimal, not just
//     greedy);
//  4. try to re-place the evicted jobs elsewhere with the engine, on the
//     cluster as it would be with the gang placed: a job that finds room is
//     a move, not a loss.
//
// The plan with the fewest GPUs evicted wins (ties: fewest jobs, then the
// engine's order of domains). Cost is bounded: domains x jobs-per-domain
// placements, each cheap; the planner runs outside slurmctld.
//
// Which jobs may be evicted is the caller's policy (Options.Evictable):
// Slurm preemption settings, QOS, or a list from the administrator.
package defrag
