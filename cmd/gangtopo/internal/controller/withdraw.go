package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// Withdraw puts back what the controller holds in Slurm, for a daemon
// that stops for good: its binary was removed with the package
// (internal/daemon, binary.go), so no controller will tend any of it
// again. A restart withdraws nothing: the next process tends it all.
//
//  1. Slurm is read afresh (one poll), for the pins below.
//  2. The defragmentation's holds: every gangtopo reservation is ended,
//     each gang taken out first (defragrun.Executor.EndAll), one audit
//     line each. A hold left behind would end at its end time with a
//     running gang inside it, and the gang with it.
//  3. The preemption pins this process set: each gang still pending with
//     the node list it was given gets the list cleared, one audit line
//     each. (A pin set before the last restart is not known here; it
//     stays, and the gang starts where Slurm's preemption frees it.)
//  4. The quota's reclaim pins: each waiting job in the reclaim QOS with a
//     node list goes back to its account's own QOS with the list cleared.
//
// The QOS limits the quota duty set, and the bindings the plugin wrote,
// are not taken back here: docs/admin.md's "Removing the package" says
// what to do about them before the removal. Withdraw returns what it
// could not put back, one phrase each; nil when nothing is left.
func (c *Controller) Withdraw(ctx context.Context, why string) (left []string) {
	if c.defrag == nil && c.quota == nil {
		return nil
	}
	st, _, err := c.poll.Poll(ctx)
	if err != nil {
		c.log.Error().Err(err).Msg("withdraw: reading Slurm failed; the holds are ended, the pins are left")
		st = nil
	}
	if c.defrag != nil {
		left = append(left, c.defrag.withdraw(ctx, st, why)...)
	}
	if c.quota != nil {
		left = append(left, c.quota.withdraw(ctx, st, why)...)
	}
	return left
}

// withdraw is Withdraw's steps 2 and 3.
func (d *defragDuty) withdraw(ctx context.Context, st *slurmstate.State, why string) (left []string) {
	x := d.executor()
	holds, err := x.EndAll(ctx, why)
	if err != nil {
		left = append(left, "the defragmentation's holds (listing them failed: "+err.Error()+")")
	}
	for _, h := range holds {
		left = append(left, "hold "+h)
	}
	if st == nil {
		for gang := range d.pinned {
			left = append(left, "the preemption pin of job "+gang)
		}
		return left
	}
	for _, pj := range st.Queued {
		p, ok := d.pinned[pj.ID]
		if !ok || !sameNodes(pj.Job.ReqNodes, p.nodes) {
			continue // started, or its node list is not gangtopo's any more
		}
		e := defragrun.Entry{Time: d.now().UTC(), Action: "unpin", Job: pj.ID, Gang: pj.ID, Nodes: p.nodes, By: "controller", Result: "ok", Reason: why}
		if err := d.setup.Slurm.Pin(ctx, pj.ID, ""); err != nil {
			e.Result = err.Error()
			left = append(left, "the preemption pin of job "+pj.ID)
		}
		if aerr := x.Audit.Append(e); aerr != nil {
			d.log.Error().Err(aerr).Msg("defrag: audit log")
		}
		d.log.Info().Str("gang", pj.ID).Str("nodes", p.nodes).Str("result", e.Result).Msg("defrag: preemption pin cleared")
		delete(d.pinned, pj.ID)
	}
	return left
}

// sameNodes says whether two Slurm node lists name the same nodes
// ("node[05-08]" and "node05,node06,node07,node08" do).
func sameNodes(a, b string) bool {
	x, errA := hostlist.Expand(a)
	y, errB := hostlist.Expand(b)
	if errA != nil || errB != nil {
		return a == b
	}
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// withdraw is Withdraw's step 4.
func (q *quotaDuty) withdraw(ctx context.Context, st *slurmstate.State, why string) (left []string) {
	cfg := q.cfg.Quota
	if !cfg.Enabled || cfg.ReclaimQOS == "" {
		return nil
	}
	if st == nil {
		return []string{fmt.Sprintf("the reclaim pins (jobs in QOS %s with a node list)", cfg.ReclaimQOS)}
	}
	now := q.now()
	for _, pj := range st.Queued {
		if pj.Facts.QOS != cfg.ReclaimQOS || pj.Job.ReqNodes == "" {
			continue
		}
		if q.unpin(ctx, pj, now, "quota: reclaim pin released ("+why+")") != nil {
			left = append(left, "the reclaim pin of job "+pj.Target)
		}
	}
	return left
}
