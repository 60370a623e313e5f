package defragrun

import (
	"context"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
)

// Tending the holds, for the controller's every duty round, whoever made
// them (this controller, one before a restart, the backup's, or `defrag
// apply`): each reservation named HoldPrefix+gang is found in Slurm, and
// its plan in the audit log (Episodes), and it is ended
//
//   - when the gang runs (taken out first, then the reservation deleted),
//     is gone, or is no longer pending;
//   - when actions are switched off (off): what gangtopo holds is put
//     back;
//   - when the hold runs out within margin and the gang still waits (the
//     gang keeps waiting, unheld);
//   - when a requeue of its plan did not go through (refused, failed, run
//     out of time): the room it was to free is not whole;
//   - when no requeue was recorded for it orphanGrace after it was made:
//     the process carrying it out was killed or stopped between the hold
//     and its requeues, so nothing is coming to free the room.
//
// Otherwise it is kept. Should Tend not run (the controller stopped), the
// hold's own end leaves the gang alone (HoldFlags).

// orphanGrace is how long a hold may wait for its first requeue: the
// carrying process attaches the gang and reads the cluster again (a poll)
// in between, a few seconds; Carry gives a plan up whose re-check took
// half of it, so that no requeue comes after Tend took its hold for an
// orphan.
const orphanGrace = time.Minute

// Tend ends the holds that are done, and returns how many are kept. A
// hold whose gang's state cannot be read is kept for the next round.
func (x *Executor) Tend(ctx context.Context, margin time.Duration, off bool) (kept int, err error) {
	holds, err := x.Slurm.Holds(ctx)
	if err != nil || len(holds) == 0 {
		return 0, err
	}
	now := x.Now()
	plans, read := x.plans(now)
	for _, h := range holds {
		if ctx.Err() != nil {
			return kept, ctx.Err()
		}
		if why := x.tendOne(ctx, h, plans, read, margin, off, now); why != "" {
			if off && x.Withdrawing != "" {
				why = x.Withdrawing
			}
			x.endHold(ctx, h.Gang(), h.Name, baseOf(h), "release", why)
			continue
		}
		kept++
	}
	return kept, nil
}

// tendOne says why hold h ends now ("" to keep it).
func (x *Executor) tendOne(ctx context.Context, h Hold, plans map[string]*Episode, read bool, margin time.Duration, off bool, now time.Time) string {
	state, reason, ok, err := x.Slurm.Job(ctx, h.Gang())
	plan := plans[h.Name]
	switch {
	case err != nil:
		return ""
	case ok && state == "RUNNING":
		return ReasonRuns
	case !ok || state != "PENDING":
		return "the gang is " + orGone(state, ok) + ", not pending"
	case off:
		return "actions are switched off: the hold is put back, the gang keeps waiting"
	case !h.End.IsZero() && h.End.Sub(now) < margin:
		return "the hold runs out and the gang has not started (" + reason + ")"
	case !read:
		return ""
	case plan != nil && plan.Failed != "":
		return "a requeue of its plan did not go through (" + plan.Failed + "): the room is not whole"
	case (plan == nil || plan.Requeues == 0) && !h.Start.IsZero() && now.Sub(h.Start) >= orphanGrace:
		return "no requeue was recorded for it within " + orphanGrace.String() + " of the hold: the plan was not carried out (its process ended or stopped)"
	}
	return ""
}

// plans are the open plans of the audit log by reservation (the latest
// for each); read is false when the log cannot be read (the rules that
// need it are then skipped: the hold is kept until its gang runs or it
// runs out).
func (x *Executor) plans(now time.Time) (map[string]*Episode, bool) {
	changes, _, err := x.Audit.Changes(now, x.Cfg.Hold+time.Hour)
	if err != nil {
		x.alarmf("defrag: reading the audit log for the holds' plans: %v", err)
		return nil, false
	}
	out := map[string]*Episode{}
	eps := Episodes(changes)
	for i := range eps {
		if !eps[i].Pin && !eps[i].Ended {
			out[eps[i].Reservation] = &eps[i]
		}
	}
	return out, true
}

func baseOf(h Hold) actuate.Entry {
	return actuate.Entry{Gang: h.Gang(), Reservation: h.Name, Nodes: h.Nodes}
}
