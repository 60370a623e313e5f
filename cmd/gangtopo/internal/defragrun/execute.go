package defragrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Executor carries proposals out (the package comment gives the steps and
// why in that order): every change through Door, whose audit log is also
// what Tend reads back.
type Executor struct {
	Door  *actuate.Door
	Slurm Reader
	Audit actuate.Audit
	Cfg   ctld.DefragConfig
	Now   func() time.Time
	// Logf, when set, gets one line per step (the command prints them);
	// Alarmf what leaves something behind (a hold that could not be
	// ended), Logf when not set.
	Logf, Alarmf func(format string, args ...any)
	// Poll is how often a state is polled while waiting; 0: one second.
	Poll time.Duration
	// Withdrawing, when set, is why every hold Tend ends is ended: a
	// controller stopping for good (controller.Withdraw) says so in the
	// audit log, whatever the gang does.
	Withdrawing string
}

// Recheck reads the cluster again and plans again inside the held domain.
type Recheck func(ctx context.Context) (*Proposal, bool, error)

// StaleError says the cluster changed so that the plan no longer holds;
// nothing was requeued.
type StaleError struct{ Msg string }

func (e *StaleError) Error() string { return e.Msg }

// Outcome is what Carry did.
type Outcome struct {
	Hold     string    // the reservation holding the room
	Made     time.Time // when it was made: it ends defrag.hold later
	Requeued []string  // jobs requeued
}

// ErrNoRoom says the door's per-cycle limit leaves too few changes for the
// whole plan (hold, attach, the requeues and what ends the hold): it is
// left for a later cycle, and nothing was changed.
var ErrNoRoom = errors.New("too few changes left this cycle (actions.max_per_cycle) for the whole plan: left for a later cycle; nothing was changed")

// Carry holds the room, checks the plan again, and requeues what both
// plans name. Any requeue that does not go through (Slurm refuses it, the
// audit line cannot be written, the door's limits, an interrupt) stops
// the plan: the hold is ended, and the error says what was requeued.
func (x *Executor) Carry(ctx context.Context, pr *Proposal, recheck Recheck) (*Outcome, error) {
	if room := x.Door.Room(); room >= 0 && room < 4+2*len(pr.Victims) {
		return nil, ErrNoRoom
	}
	gang := pr.Gang.Job.ID
	name := HoldName(gang)
	base := actuate.Entry{Gang: gang, Domain: pr.Domain}
	made, err := x.hold(ctx, pr, name, base)
	if err != nil {
		return nil, err
	}
	base.Reservation = name
	out := &Outcome{Hold: name, Made: made}
	now, ok, err := recheck(ctx)
	if err == nil && x.Now().Sub(made) >= orphanGrace/2 {
		err = fmt.Errorf("it took %s, past %s after the hold (slurmctld slow?)", x.Now().Sub(made).Round(time.Second), orphanGrace/2)
	}
	if why := stale(pr, now, ok, err); why != "" {
		msg := "the plan is stale: " + why + "; nothing was requeued and " + x.endHold(ctx, gang, name, base, "abandon", why)
		return nil, &StaleError{msg}
	}
	if err := x.requeue(ctx, pr, now.Victims, base, out); err != nil {
		return out, err
	}
	if x.Cfg.Expedite {
		x.expedite(ctx, out.Requeued, base)
	}
	return out, nil
}

// hold makes the reservation and attaches the gang to it; it returns when
// the reservation was made.
func (x *Executor) hold(ctx context.Context, pr *Proposal, name string, base actuate.Entry) (time.Time, error) {
	gang := pr.Gang.Job
	e := base
	e.Job, e.GPUs, e.Nodes, e.Cost, e.LostGPUHours = gang.ID, pr.Gang.Request.GPUs, pr.GangNode, pr.Plan.Cost, pr.Lost
	e.Reason = fmt.Sprintf("reservation %s on %s for %s", name, pr.GangNode, x.Cfg.Hold)
	user := gang.User
	if user == "" {
		user = fmt.Sprint(gang.Job.UserID)
	}
	made := x.Now()
	if _, err := x.do(ctx, holdChange(e, name, pr.GangNode, user, x.Cfg.Hold)); err != nil {
		return made, fmt.Errorf("holding %s for job %s: %w; nothing was requeued", pr.GangNode, gang.ID, err)
	}
	e.Reason = ""
	if _, err := x.do(ctx, attachChange(e, gang.ID, name)); err != nil {
		base.Reservation = name
		return made, fmt.Errorf("attaching job %s to hold %s: %w; nothing was requeued and %s", gang.ID, name, err,
			x.endHold(ctx, gang.ID, name, base, "abandon", "the gang could not be attached"))
	}
	x.logf("hold %s on %s for job %s: made", name, pr.GangNode, gang.ID)
	return made, nil
}

// requeue requeues the victims one by one; the first that does not go
// through, or an interrupt, ends the hold.
func (x *Executor) requeue(ctx context.Context, pr *Proposal, victims []Victim, base actuate.Entry, out *Outcome) error {
	gang := pr.Gang.Job.ID
	for _, v := range victims {
		if ctx.Err() != nil {
			return x.stop(ctx, gang, out, base, "interrupted before job "+v.ID+" was requeued", ctx.Err())
		}
		e := base
		e.GPUs, e.Nodes, e.LostGPUHours, e.Cost = v.GPUs, v.Nodes, v.Lost, v.Cost
		e.Reason = fmt.Sprintf("for gang %s in %s %s", gang, pr.Gang.Request.EffectiveTier(), pr.Domain)
		_, err := x.do(ctx, requeueChange(e, v.ID))
		switch {
		case err != nil && endedErr(err):
			x.logf("requeue job %s: it ended before its requeue", v.ID)
			continue
		case err != nil:
			return x.stop(ctx, gang, out, base, "the requeue of job "+v.ID+" did not go through", err)
		}
		x.logf("requeue job %s: ok", v.ID)
		out.Requeued = append(out.Requeued, v.ID)
	}
	return nil
}

// stop gives the plan up part way: the hold is ended, and the error says
// why (wrapping cause) and what was requeued before.
func (x *Executor) stop(ctx context.Context, gang string, out *Outcome, base actuate.Entry, why string, cause error) error {
	ended := x.endHold(ctx, gang, out.Hold, base, "abandon", fmt.Sprintf("%s (%v)", why, cause))
	return fmt.Errorf("%s (%w): the plan is given up and %s; %d job(s) requeued before: %s", why, cause, ended,
		len(out.Requeued), orNone(strings.Join(out.Requeued, ",")))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// stale compares the plan being carried out with the plan made again
// after the hold: "" when the new one takes only jobs the first named.
func stale(pr, now *Proposal, ok bool, err error) string {
	switch {
	case err != nil:
		return "reading the cluster again failed: " + err.Error()
	case !ok:
		return "no plan holds any more inside " + pr.Domain
	case now.Limit != nil:
		return now.Limit.Error()
	}
	var named []string
	for _, v := range pr.Victims {
		named = append(named, v.ID)
	}
	var extra []string
	for _, v := range now.Victims {
		if !slices.Contains(named, v.ID) {
			extra = append(extra, v.ID)
		}
	}
	if len(extra) > 0 {
		return fmt.Sprintf("the cluster changed: the plan would now also need job(s) %s, which it did not name", strings.Join(extra, ","))
	}
	return ""
}

// endedErr says a requeue failed because the job ended meanwhile.
func endedErr(err error) bool { return !actuate.Refused(err) && endedMsg(err.Error()) }

// endedMsg says a requeue's outcome is that the job had ended.
func endedMsg(m string) bool {
	return strings.Contains(m, "Invalid job id") || strings.Contains(m, "already completed") || strings.Contains(m, "Job is pending execution")
}

// expedite makes each requeued job eligible at once, once Slurm has it
// pending again (an update before the requeue has finished is undone by
// the requeue's own begin time), and no sooner than
// actuate.RequeueMargin after that (the requeue came before: a restart in
// the second of its kill would be killed for good, actuate/restart.go).
func (x *Executor) expedite(ctx context.Context, ids []string, base actuate.Entry) {
	deadline := x.Now().Add(x.Cfg.Timeout)
	for _, id := range ids {
		if why := x.waitPending(ctx, id, deadline); why != "" {
			x.logf("expedite job %s: %s", id, why)
			continue
		}
		x.waitAfter(ctx, x.Now())
		if _, err := x.do(ctx, expediteChange(base, id)); err != nil {
			x.logf("expedite job %s: %v", id, err)
			continue
		}
		x.logf("expedite job %s: ok", id)
	}
}

// waitAfter waits until a job seen requeued at requeued may restart
// (actuate.MayRestart).
func (x *Executor) waitAfter(ctx context.Context, requeued time.Time) {
	for !actuate.MayRestart(requeued, x.Now()) && ctx.Err() == nil {
		x.sleep(ctx)
	}
}

// waitPending waits until Slurm has a requeued job pending again; it says
// why not when it did not by the deadline.
func (x *Executor) waitPending(ctx context.Context, id string, deadline time.Time) string {
	for {
		state, _, ok, err := x.Slurm.Job(ctx, id)
		switch {
		case err == nil && ok && state == "PENDING":
			return ""
		case err != nil || !ok || x.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Sprintf("not pending again in time (state %q, %v): it waits for Slurm's requeue delay", state, err)
		}
		x.sleep(ctx)
	}
}

// do makes one change through the door, its command bounded by
// defrag.timeout (one that runs out of time ends the door's changes for
// the cycle: slurmctld is slow).
func (x *Executor) do(ctx context.Context, c actuate.Change) (string, error) {
	c.Timeout = x.Cfg.Timeout
	return x.Door.Do(ctx, c)
}

func (x *Executor) logf(format string, args ...any) {
	if x.Logf != nil {
		x.Logf(format, args...)
	}
}

func (x *Executor) sleep(ctx context.Context) {
	d := x.Poll
	if d == 0 {
		d = time.Second
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
