package defragrun

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// ReclaimPlan is where an entitled job goes when it takes its share back:
// the nodes to pin it to (ReqNodeList) and the borrowed jobs Slurm's
// preemption will requeue there.
type ReclaimPlan struct {
	Nodes   string
	Domain  string
	Victims []string
	FitsNow bool
	// nodes are the plan's nodes (Nodes), for View.Pinned.
	nodes []topology.NodeID
}

// Reclaim plans the room pending job pj, within its account's share, needs
// by taking back borrowed GPUs only (quota.Reclaim: jobs of the borrow QOS,
// never an account below its share, defrag.For's victim choice at the
// least cost of the defrag: section's cost model). A job with a gangtopo
// decision keeps its request and binding: the plan lies inside a domain
// it is bound to, whatever that domain's tier (the one-node form binds to
// nodes), never where its binding keeps it out (Slurm would not start it
// there: the pin, ReqNodeList only, would hold it until pin_timeout). ok
// is false when no plan exists, and for a binding that names no domain of
// the topology.
//
// A borrowed job Slurm may not requeue (requeue off, or not a batch job:
// preempting it under PreemptMode=REQUEUE cancels it) is never a victim:
// the controller moves no such job to the borrow QOS, but its owner may
// have set Requeue=0 since.
//
// A job that fits the free GPUs but that Slurm has already passed over
// (a pending reason other than None: the free GPUs are held for an older
// job, by a backfill reservation say) would keep waiting below its share
// on a plan that "fits now": it is planned again on borrowed GPUs only
// (quota.ReclaimOptions.PassedOver).
func (p *Planner) Reclaim(v *View, pj slurmstate.PendingJob, l *quota.Ledger, borrowQOS string) (ReclaimPlan, bool, error) {
	r, err := p.dec.JobRequest(pj.Job)
	if err != nil {
		return ReclaimPlan{}, false, fmt.Errorf("job %s: %w", pj.Target, err)
	}
	g := Gang{Job: pj, Request: r}
	if d, err := jobsubmit.ParseDecision(pj.Decision); err == nil {
		if o, err := request.ParseOption(d.Request); err == nil && d.Request != "" {
			o.Apply(&g.Request)
		}
		// every bound domain, whatever its tier (a node for the one-node
		// form, a leaf for a gang whose own tier is wider or narrower)
		for _, name := range d.Bound {
			if id, ok := p.Cluster.DomainByName(name); ok {
				g.Domains = append(g.Domains, id)
			}
		}
		if len(d.Bound) > 0 && len(g.Domains) == 0 {
			return ReclaimPlan{}, false, nil // bound where the topology does not say: nowhere known to plan
		}
	}
	g.Request.JobID = pj.ID
	s := v.Snapshot
	cfg := p.Config.Defrag
	holder := func(j int) (string, bool) {
		f := v.Facts[s.Jobs[j].ID]
		return strings.ToLower(f.Account), f.QOS == borrowQOS && f.Requeue && f.Batch
	}
	cost := func(j int) float64 {
		return cfg.Cost.Cost(JobOf(v.Facts[s.Jobs[j].ID], s.Jobs[j].Partition), s.Jobs[j].Alloc.NumGPUs(), v.At, pj.Priority)
	}
	opts := quota.ReclaimOptions{Holder: holder, Cost: cost, Domains: g.Domains, PassedOver: passedOver(pj.Reason)}
	plan, ok := quota.Reclaim(p.eng, s, g.Request, l, opts)
	if !ok {
		return ReclaimPlan{}, false, nil
	}
	out := ReclaimPlan{Nodes: hostlist.Compress(place.NodeNames(p.Cluster, plan.Gang.Alloc)),
		Domain: p.Cluster.Domains[plan.Domain].Name, FitsNow: len(plan.Evict) == 0}
	for _, j := range plan.Evict {
		out.Victims = append(out.Victims, s.Jobs[j].ID)
	}
	for _, na := range plan.Gang.Alloc.Nodes {
		out.nodes = append(out.nodes, na.Node)
	}
	sort.Strings(out.Victims)
	return out, true, nil
}

// passedOver says whether Slurm's pending reason shows its scheduler has
// looked at the job and left it waiting ("None": not yet looked at).
func passedOver(reason string) bool { return reason != "" && reason != "None" }

// Pinned counts a job of account, gpus GPUs within its share, as pinned
// by plan, for the plans made after it in the same cycle (the controller
// reclaims for several jobs on one poll):
//
//   - the plan's nodes are taken whole: what is free on them is held, and
//     the jobs running there leave the view's jobs with their resources
//     still held, so no later plan places a gang there or takes a job
//     there (Slurm preempts for the pinned job whichever of them it
//     chooses);
//   - the victims leave the view, their GPUs elsewhere freed (Slurm
//     requeues them whole), so that no later plan counts them again;
//   - the ledger counts the victims as stopped and waiting again (they
//     ran borrowing: their account's excess shrinks by their GPUs) and the
//     pinned job as running in its own share.
//
// The view's snapshot is replaced by a copy: the published one is shared.
func (v *View) Pinned(plan ReclaimPlan, l *quota.Ledger, account string, gpus int) {
	s := v.Snapshot.Clone()
	victim, on := map[string]bool{}, map[topology.NodeID]bool{}
	for _, id := range plan.Victims {
		victim[id] = true
	}
	for _, n := range plan.nodes {
		on[n] = true
	}
	jobs := s.Jobs[:0:0]
	for _, j := range s.Jobs {
		switch {
		case victim[j.ID]:
			_ = s.Release(j.Alloc) // held in the snapshot: cannot fail
			l.Stop(strings.ToLower(v.Facts[j.ID].Account), j.Alloc.NumGPUs(), true, true)
		case !runsOn(j.Alloc, on):
			jobs = append(jobs, j)
		}
	}
	s.Jobs = jobs
	_ = s.Allocate(freeOn(s, plan.nodes)) // only what is free: cannot fail
	l.Start(account, gpus, false)
	v.Snapshot = s
}

// runsOn says whether an allocation holds anything on one of the nodes.
func runsOn(a occupancy.Allocation, nodes map[topology.NodeID]bool) bool {
	for _, na := range a.Nodes {
		if nodes[na.Node] {
			return true
		}
	}
	return false
}

// freeOn is all that is free on the nodes of s, as one allocation (one
// part a GPU, each with its own free share, and the CPUs and memory).
func freeOn(s *occupancy.Snapshot, nodes []topology.NodeID) occupancy.Allocation {
	var a occupancy.Allocation
	for _, n := range nodes {
		a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: n, CPUMilli: s.FreeCPUMilli[n], MemMiB: s.FreeMemMiB[n]})
		for i, free := range s.NodeFree(n) {
			if free > 0 {
				a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: n, GPUs: []int{i}, Milli: free})
			}
		}
	}
	return a
}
