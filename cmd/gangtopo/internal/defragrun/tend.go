package defragrun

import (
	"context"
	"time"
)

// Tend ends the holds that are done, for the controller's every cycle:
// the gang runs (its hold is released: the gang taken out, the
// reservation deleted), the gang is gone or no longer pending, or the
// hold is about to run out (within margin) with the gang still waiting
// (the hold is given up, the gang keeps waiting). It returns the holds
// still kept.
func (x *Executor) Tend(ctx context.Context, margin time.Duration) (kept int, err error) {
	holds, err := x.Slurm.Holds(ctx)
	if err != nil {
		return 0, err
	}
	now := x.Now()
	for _, h := range holds {
		gang := h.Gang()
		base := Entry{Gang: gang, Reservation: h.Name, Nodes: h.Nodes}
		state, reason, ok, err := x.Slurm.Job(ctx, gang)
		switch {
		case err != nil:
			kept++ // ask again next cycle
		case ok && state == "RUNNING":
			x.endHold(ctx, gang, h.Name, base, "release", "the gang runs")
		case !ok || state != "PENDING":
			x.endHold(ctx, gang, h.Name, base, "release", "the gang is "+orGone(state, ok)+", not pending")
		case !h.End.IsZero() && h.End.Sub(now) < margin:
			x.endHold(ctx, gang, h.Name, base, "release", "the hold runs out and the gang has not started ("+reason+")")
		default:
			kept++
		}
	}
	return kept, nil
}

// EndAll ends every hold, whatever its gang does, for a controller that
// stops for good (its package removed) and will not tend them again: a
// hold left behind ends at its end time, and a gang still inside it then
// ends with it, while a gang still waiting stays bound to a reservation
// that is gone. Each gang is taken out first and keeps its place in the
// queue. It returns the holds still there afterwards (none when all went).
func (x *Executor) EndAll(ctx context.Context, why string) (left []string, err error) {
	holds, err := x.Slurm.Holds(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range holds {
		x.endHold(ctx, h.Gang(), h.Name, Entry{Gang: h.Gang(), Reservation: h.Name, Nodes: h.Nodes}, "release", why)
	}
	if len(holds) == 0 {
		return nil, nil
	}
	after, err := x.Slurm.Holds(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range after {
		left = append(left, h.Name)
	}
	return left, nil
}
