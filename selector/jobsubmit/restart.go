package jobsubmit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Re-binding a gang requeued after one of its nodes failed.
//
// When a node under a running batch job fails, Slurm requeues the job
// (when it may be requeued): the job pends again with the fields it had,
// so with the binding made at submit, its restart count raised and its
// node list cleared, and it may not start before its begin time (the
// credential lifetime, about two minutes, reason BeginTime). The binding
// lists the domains that could hold the gang when it was submitted; the
// one it ran in has a failed member now. The controller asks Restart about
// such a job during that wait, with the nodes it ran on (remembered from
// its earlier polls: Slurm forgets them at the requeue).
//
// Stages:
//
//  1. Original: the job as submitted (as Rebind).
//  2. The old domain: the tightest domain that held every node the gang
//     ran on (a leaf, a block, a node). The engine places the job as
//     submitted inside it, on its healthy nodes, on the snapshot of now
//     (the gang's own GPUs are free again). If it fits, the new decision
//     is that placement: the old domain listed first in the binding, a
//     healthy replacement for the failed node inside it; the rest of the
//     alternatives after it, so Slurm may still start the job elsewhere
//     if the old domain fills before it schedules.
//  3. Otherwise a new decision on the whole cluster, as at submit: the
//     tightest domain that can hold the gang now (or the domains that
//     will, for a waiting one), the degraded ones last (rankedDomains).
//     When no domain can hold it now, but the old one could with the
//     lent work on its spares gone (spares.go, reclaimLent), it is placed
//     there after all, and Reclaims names those jobs: Slurm preempts them
//     when it starts the gang (the lent partitions are ones it preempts);
//     gangtopo requeues nothing. Lent work is taken back only when
//     nothing free holds the gang. The binding then names the old domain
//     alone: Slurm 26.05 does not preempt for a requeued gang bound to
//     several alternatives (found on the lab, LentSpareTakenBack; 22.05
//     and 24.11 do), and a gang no other domain holds now loses nothing;
//     when another frees first, the ordinary re-binding moves it there
//     (rebind.go: its binding cannot start it, a new decision can).
//  4. The update: the fields the new rewrite changes (as Rebind). None
//     when it binds the job as it is bound already.
//
// Why bother when the old binding lists other domains too: Slurm takes
// the first listed alternative that can start the job, and the old
// domain, listed first at submit, cannot now; the next listed is the
// submit-time ranking, not the tightest fit of now, and a job that was
// not bound at all (a preferred gang that went wider, tier any) would
// start wherever Slurm finds nodes.

// Restarting is the answer about one requeued gang.
type Restarting struct {
	Rebinding
	// Old is the domain the gang ran in ("" when its nodes are not in the
	// cluster file); InOld says the new decision places it there again.
	Old   string
	InOld bool
	// Reclaims are the lent jobs on the old domain's spares that the
	// placement counts as gone (Slurm preempts them to start the gang).
	Reclaims []string
}

// Restart decides how to bind the requeued job now (as Slurm holds it,
// with gangtopo's decision d), which ran on the nodes ran, on snapshot s.
// Rebinding.Stale says there is an update to make. gen labels the
// snapshot in the new decision line. e must not be used by anyone else
// meanwhile.
func (dc *Decider) Restart(now Job, d Decision, ran []string, s *occupancy.Snapshot, e *place.Engine, gen uint64) Restarting {
	orig, err := Original(now, d, dc.policy.FeaturePrefix)
	if err != nil {
		return Restarting{Rebinding: Rebinding{Why: err.Error()}}
	}
	p := dc.Prepare(orig)
	if p.Done {
		return Restarting{Rebinding: Rebinding{Why: fmt.Sprintf("a new decision would not place it (%s: %s)", p.Final.Decision.Verdict, p.Final.Decision.Text)}}
	}
	dc.allowSpares(&p, append(slices.Clone(d.Spares), dc.spareDomainsOf(ran)...))
	out := Restarting{}
	old := dc.commonDomain(ran)
	pl := Placement{}
	at := s
	if old != topology.NoDomain {
		out.Old = dc.cluster.Domains[old].Name
		inOld := p
		inOld.Request.Allowed = intersect(p.Request.Allowed, nodeNames(dc.cluster, domainNodes(dc.cluster, old)))
		if len(inOld.Request.Allowed) > 0 {
			pl = dc.Place(e, s, inOld, nil)
			out.InOld = pl.Status == place.Placed
		}
		if !out.InOld {
			pl = dc.Place(e, s, p, nil)
		}
		if len(inOld.Request.Allowed) > 0 && pl.Status != place.Placed {
			if rs, lent := dc.reclaimLent(s, p, old); len(lent) > 0 {
				if rpl := dc.Place(e, rs, inOld, nil); rpl.Status == place.Placed {
					pl, at, out.InOld, out.Reclaims = rpl, rs, true, lent
					p.OnlyFirst = true
				}
			}
		}
	} else {
		pl = dc.Place(e, s, p, nil)
	}
	res, err := dc.Rewrite(orig, p, pl, at, gen)
	if err != nil {
		out.Why = err.Error()
		return out
	}
	if res.Action != Modify {
		out.Why = "a new decision would leave it alone"
		return out
	}
	u := diff(now, res.Apply(orig))
	switch {
	case u.Empty():
		out.Why = "a new decision binds it the same way"
	case out.InOld && len(out.Reclaims) > 0:
		out.Rebinding = Rebinding{Stale: true, Why: fmt.Sprintf("requeued after a node failure: a healthy replacement inside %s, listed first, on its spares once Slurm preempts the lent job(s) %s there",
			out.Old, strings.Join(out.Reclaims, ",")), Result: res, Update: u, Tasks: pl.Tasks}
	case out.InOld:
		out.Rebinding = Rebinding{Stale: true, Why: "requeued after a node failure: a healthy replacement inside " + out.Old + ", listed first", Result: res, Update: u, Tasks: pl.Tasks}
	default:
		out.Rebinding = Rebinding{Stale: true, Why: fmt.Sprintf("requeued after a node failure: %s cannot hold it now; %s", orOld(out.Old), res.Decision.Text), Result: res, Update: u, Tasks: pl.Tasks}
	}
	return out
}

// commonDomain is the tightest domain holding every named node (NoDomain
// when one is not in the cluster file, or there are none).
func (dc *Decider) commonDomain(names []string) topology.DomainID {
	c := dc.cluster
	var ids []topology.NodeID
	for _, name := range names {
		n, ok := c.NodeByName(name)
		if !ok {
			return topology.NoDomain
		}
		ids = append(ids, n)
	}
	if len(ids) == 0 {
		return topology.NoDomain
	}
	for _, t := range topology.Tiers() {
		if t == topology.TierNVLink {
			continue // inside a node: the node is the tightest a gang restarts in
		}
		d := c.Nodes[ids[0]].Up[t]
		same := d != topology.NoDomain
		for _, n := range ids[1:] {
			same = same && c.Nodes[n].Up[t] == d
		}
		if same {
			return d
		}
	}
	return topology.NoDomain
}

func orOld(name string) string {
	if name == "" {
		return "the domain it ran in"
	}
	return name
}
