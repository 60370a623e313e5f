package defragrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Executor carries proposals out through Slurm and writes the audit log
// (the package comment gives the steps and why in that order).
type Executor struct {
	Slurm Slurm
	Audit Audit
	Cfg   ctld.DefragConfig
	By    string
	Now   func() time.Time
	// Logf, when set, gets one line per step (the command prints them).
	Logf func(format string, args ...any)
	// Poll is how often a state is polled while waiting; 0: one second.
	Poll time.Duration
}

// Recheck reads the cluster again and plans again inside the held domain.
type Recheck func(ctx context.Context) (*Proposal, bool, error)

// StaleError says the cluster changed so that the plan no longer holds;
// nothing was requeued.
type StaleError struct{ Msg string }

func (e *StaleError) Error() string { return e.Msg }

// Outcome is what Carry did.
type Outcome struct {
	Hold     string   // the reservation holding the room
	Requeued []string // jobs requeued
}

// Carry holds the room, checks the plan again, and requeues what both
// plans name.
func (x *Executor) Carry(ctx context.Context, pr *Proposal, recheck Recheck) (*Outcome, error) {
	gang := pr.Gang.Job
	name := HoldName(gang.ID)
	out := &Outcome{Hold: name}
	base := Entry{Gang: gang.ID, Domain: pr.Domain, Reservation: name}
	if err := x.hold(ctx, pr, name, base); err != nil {
		return nil, err
	}
	now, ok, err := recheck(ctx)
	if why := stale(pr, now, ok, err); why != "" {
		x.endHold(ctx, gang.ID, name, base, "abandon", why)
		return nil, &StaleError{"the plan is stale: " + why + "; nothing was requeued and the hold is ended"}
	}
	for _, v := range now.Victims {
		e := base
		e.Action, e.Job, e.GPUs, e.Nodes, e.LostGPUHours, e.Cost = "requeue", v.ID, v.GPUs, v.Nodes, v.Lost, v.Cost
		err := x.Slurm.Requeue(ctx, v.ID)
		switch {
		case err != nil && endedErr(err):
			x.write(e, "ended before its requeue: "+err.Error(), "")
			continue
		case err != nil:
			x.write(e, err.Error(), "")
			x.endHold(ctx, gang.ID, name, base, "abandon", "job "+v.ID+" could not be requeued")
			return out, fmt.Errorf("requeue of job %s failed (%v): the hold is ended; %d job(s) requeued before it: %s",
				v.ID, err, len(out.Requeued), strings.Join(out.Requeued, ","))
		}
		x.write(e, "ok", fmt.Sprintf("for gang %s in %s %s", gang.ID, pr.Gang.Request.EffectiveTier(), pr.Domain))
		out.Requeued = append(out.Requeued, v.ID)
	}
	if x.Cfg.Expedite {
		x.expedite(ctx, out.Requeued, base)
	}
	return out, nil
}

// hold makes the reservation and attaches the gang to it.
func (x *Executor) hold(ctx context.Context, pr *Proposal, name string, base Entry) error {
	gang := pr.Gang.Job
	e := base
	e.Action, e.Job, e.GPUs, e.Nodes, e.Cost, e.LostGPUHours = "hold", gang.ID, pr.Gang.Request.GPUs, pr.GangNode, pr.Plan.Cost, pr.Lost
	user := gang.User
	if user == "" {
		user = fmt.Sprint(gang.Job.UserID)
	}
	if err := x.Slurm.Hold(ctx, name, pr.GangNode, user, x.Cfg.Hold); err != nil {
		x.write(e, err.Error(), "")
		return fmt.Errorf("holding %s for job %s: %w; nothing was requeued", pr.GangNode, gang.ID, err)
	}
	if err := x.Slurm.Attach(ctx, gang.ID, name); err != nil {
		x.write(e, err.Error(), "")
		if uerr := x.Slurm.Unhold(ctx, name); uerr != nil {
			x.logf("ending hold %s: %v", name, uerr)
		}
		return fmt.Errorf("attaching job %s to hold %s: %w; nothing was requeued", gang.ID, name, err)
	}
	x.write(e, "ok", fmt.Sprintf("reservation %s on %s for %s", name, pr.GangNode, x.Cfg.Hold))
	return nil
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
func endedErr(err error) bool {
	m := err.Error()
	return strings.Contains(m, "Invalid job id") || strings.Contains(m, "already completed") || strings.Contains(m, "Job is pending execution")
}

// expedite makes each requeued job eligible at once, once Slurm has it
// pending again (an update before the requeue has finished is undone by
// the requeue's own begin time).
func (x *Executor) expedite(ctx context.Context, ids []string, base Entry) {
	deadline := x.Now().Add(x.Cfg.Timeout)
	for _, id := range ids {
		e := base
		e.Action, e.Job = "expedite", id
		if why := x.waitPending(ctx, id, deadline); why != "" {
			x.write(e, why, "")
			continue
		}
		if err := x.Slurm.Eligible(ctx, id); err != nil {
			x.write(e, err.Error(), "")
			continue
		}
		x.write(e, "ok", "StartTime=now")
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

// ErrNotStarted says the gang did not start within the wait.
var ErrNotStarted = errors.New("the gang did not start in time")

// Release waits up to wait for the gang to run, then ends its hold: the
// gang is taken out of the reservation first, then it is deleted (a
// reservation that ends while the gang runs inside it would end the gang).
func (x *Executor) Release(ctx context.Context, gang, name string, wait time.Duration) error {
	deadline := x.Now().Add(wait)
	base := Entry{Gang: gang, Reservation: name}
	for {
		state, reason, ok, err := x.Slurm.Job(ctx, gang)
		switch {
		case err == nil && ok && state == "RUNNING":
			x.endHold(ctx, gang, name, base, "release", "the gang runs")
			return nil
		case err == nil && (!ok || state != "PENDING"):
			x.endHold(ctx, gang, name, base, "release", fmt.Sprintf("the gang is %s, not pending", orGone(state, ok)))
			return fmt.Errorf("job %s is %s: %w", gang, orGone(state, ok), ErrNotStarted)
		case x.Now().After(deadline) || ctx.Err() != nil:
			x.endHold(ctx, gang, name, base, "release", fmt.Sprintf("the gang did not start within %s (%s, %s)", wait, state, reason))
			return fmt.Errorf("job %s still %s (%s) after %s: %w; the hold is ended, the gang keeps waiting", gang, state, reason, wait, ErrNotStarted)
		}
		x.sleep(ctx)
	}
}

func orGone(state string, ok bool) string {
	if !ok {
		return "gone"
	}
	return state
}

// endHold takes the gang out of the reservation and deletes it, writing
// one line under action.
func (x *Executor) endHold(ctx context.Context, gang, name string, base Entry, action, why string) {
	e := base
	e.Action, e.Job = action, gang
	var errs []string
	if state, _, ok, err := x.Slurm.Job(ctx, gang); err == nil && ok && (state == "PENDING" || state == "RUNNING") {
		if err := x.Slurm.Detach(ctx, gang); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := x.Slurm.Unhold(ctx, name); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		x.write(e, strings.Join(errs, "; "), why)
		return
	}
	x.write(e, "ok", why)
}

// write appends an audit line (logging it); an audit log that cannot be
// written is logged, never fatal to what is already under way.
func (x *Executor) write(e Entry, result, reason string) {
	e.Time, e.By, e.Result = x.Now().UTC(), x.By, result
	if reason != "" {
		e.Reason = reason
	}
	if err := x.Audit.Append(e); err != nil {
		x.logf("audit log: %v", err)
	}
	x.logf("%s job %s: %s%s", e.Action, e.Job, result, suffix(reason))
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
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
