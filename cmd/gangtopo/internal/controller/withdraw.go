package controller

import (
	"context"
	"fmt"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Withdraw puts back what gangtopo holds in Slurm, for a daemon that
// stops for good: its binary was removed with the package
// (internal/daemon, binary.go), so no controller on this host will tend
// any of it again. A restart withdraws nothing: the next process tends it
// all (pins and holds carry their owner and expiry in Slurm).
//
// It is the duty round with actions switched off, repeated until nothing
// is left or ctx ends:
//
//  1. The duty loop is stopped and waited for, so that no round of it
//     makes a change meanwhile.
//  2. Slurm is read afresh, and the door asked whether this controller
//     leads (actions.leader): only the leader acts, so a backup's removal
//     leaves the primary's holds and pins to it.
//  3. Every pin gangtopo made (the marked pending jobs, defrag's
//     preemption pins and quota's reclaim pins alike) is undone through
//     the door, one audit line each, as switching actions off does
//     (expirePins); a pin whose node list its user changed since is left.
//  4. Every defragmentation hold is ended, each gang taken out first
//     (defragrun.Executor.Tend with off): a hold left behind would end at
//     its end time, harmlessly (HoldFlags), but hold its nodes until then.
//
// The door's per-cycle limit applies to each pass; the next pass begins
// a new cycle. The QOS limits the quota duty set and the bindings the
// plugin wrote are not taken back here: docs/admin.md's "Removing the
// package" says what to do about them before the removal. Withdraw
// returns what it could not put back, one phrase each; nil when nothing
// is left.
func (c *Controller) Withdraw(ctx context.Context, why string) (left []string) {
	d := c.duties
	if d == nil {
		return nil
	}
	if c.wake != nil {
		c.wake.close()
	}
	c.stopDutyLoop(ctx)
	cfg := d.conf.cfg
	off := doorConfig(cfg.Actions, true)
	for pass := 0; pass < withdrawPasses; pass++ {
		st, _, err := slurmstate.Poll(ctx, c.cfg.Poll) // afresh: its own job listing
		if err != nil {
			return []string{"everything gangtopo holds (reading Slurm failed: " + err.Error() + ")"}
		}
		d.door.SetConfig(off)
		if lead, who := d.door.Begin(ctx); !lead {
			c.log.Warn().Str("leader", who).Msg("withdraw: another controller leads; it puts back what gangtopo holds")
			return nil
		}
		pins := actuate.Pins(st.Queued)
		var holds []defragrun.Hold
		if c.defrag != nil {
			if holds, err = c.defrag.setup.Slurm.Holds(ctx); err != nil {
				return append(pinNames(pins), "the defragmentation's holds (listing them failed: "+err.Error()+")")
			}
		}
		if len(pins) == 0 && len(holds) == 0 {
			return nil
		}
		if pass == withdrawPasses-1 || ctx.Err() != nil {
			return append(pinNames(pins), holdNames(holds)...)
		}
		now := c.now()
		c.expirePins(ctx, st, cfg, now, why)
		if c.defrag != nil && len(holds) > 0 {
			c.defrag.cfg = cfg
			x := c.defrag.executor()
			x.Withdrawing = why
			if _, err := x.Tend(ctx, defragrun.HoldMargin(cfg.Defrag.Hold), true); err != nil {
				c.log.Error().Err(err).Msg("withdraw: ending the defragmentation's holds failed")
			}
		}
	}
	return nil
}

// withdrawPasses bounds Withdraw's rounds: the last one only lists what
// is left.
const withdrawPasses = 5

// stopDutyLoop ends the duty loop (Config.AsyncDuties) and waits for its
// round in flight, at most until ctx ends.
func (c *Controller) stopDutyLoop(ctx context.Context) {
	if !c.dutiesStarted.Load() {
		return
	}
	c.stopDuties()
	select {
	case <-c.duties.done:
	case <-ctx.Done():
	}
}

func pinNames(pins []actuate.Pin) (out []string) {
	for _, p := range pins {
		out = append(out, fmt.Sprintf("the %s pin of job %s (nodes %s)", p.By, p.Job, p.Nodes))
	}
	return out
}

func holdNames(holds []defragrun.Hold) (out []string) {
	for _, h := range holds {
		out = append(out, "hold "+h.Name)
	}
	return out
}
