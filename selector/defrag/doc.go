// Package defrag plans how to make room for a gang that cannot start: which
// running jobs to take (requeue, or let Slurm preempt) so the whole gang
// fits inside one domain of its tier, at the least cost. It is pure: the
// caller says which jobs may be taken and what each costs; carrying a plan
// out (scontrol requeue, a reservation holding the room) is
// cmd/gangtopo's.
//
// # The victim choice (stable API)
//
// One function chooses victims for every caller:
//
//	For(engine, snapshot, request, Options{Evictable, Cost, Domains}) (Plan, ok)
//
// Evictable is the candidate filter (which running jobs may be taken at
// all), Cost the price of taking one; For returns the domain of the
// request's tier whose freeing costs least and the minimal set of jobs to
// take there (Plan.Evict, Plan.Cost), with where the gang then goes
// (Plan.Gang). The callers and their filters:
//
//   - defragmentation (`gangtopo defrag apply`, the controller's policy):
//     Scope.Allows (the job's own Requeue flag and gangtopo.yaml's
//     preemptible partitions, QOS and accounts) and not History.Protected
//     (requeued, or started by a plan, within the window); Cost is
//     CostModel.Cost;
//   - topology-aware preemption: Preemption.Frees (Slurm's own rule:
//     PreemptType, PriorityTier, the QOS Preempt lists, PreemptMode); the
//     controller pins the gang's ReqNodeList to Plan.Gang's nodes and Slurm
//     preempts there;
//   - quota reclaim (issue 15): the borrowed jobs only, Cost the work lost,
//     so that what is freed is the shape the owner's job needs at the least
//     work lost.
//
// # Algorithm
//
// Per candidate domain of the request's tier (e.g. every leaf; when
// Options.Domains bound the gang, only those inside a bound domain, or
// holding one, then on the bound domain's nodes only: a leaf gang bound to
// node15 is planned in node15's leaf on node15 alone):
//
//  1. collect the evictable running jobs holding GPUs in the domain; a job
//     that also holds GPUs elsewhere counts whole (it would be taken whole);
//  2. evict them greedily, least cost per GPU freed inside the domain
//     first (ties: fewest GPUs, then job order), until the engine places
//     the gang inside the domain (the engine is asked only once the free
//     capacity could hold it);
//  3. put evicted jobs back, the dearest first, whenever the gang still
//     fits without evicting them (so the set is minimal, not just greedy);
//  4. try to re-place the evicted jobs elsewhere with the engine, on the
//     cluster as it would be with the gang placed: a job that finds room
//     is a move, not a loss.
//
// The plan of least cost wins (ties: fewest GPUs evicted, fewest jobs,
// then the domain with the most free GPUs). Cost is bounded: domains x
// jobs-per-domain placements at most, each cheap; the planner runs outside
// slurmctld.
//
// # Cost, scope and limits
//
// CostModel prices a job (GPU-hours lost since its start or advertised
// checkpoint, plus a restart overhead, weighted by earlier requeues and
// priority). Scope is the site's rule of what may be requeued at all.
// Limits and History bound what is done over time: requeues per hour, a
// lost-work budget over a window, and never the same job (or a gang a plan
// started) twice within a window. Preemption reads Slurm's own rule.
package defrag
