package defragrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
)

// Why a hold ends, at the start of its release line's reason: what the
// gang's back-off reads (Episode.Started).
const (
	// ReasonRuns: the gang started.
	ReasonRuns = "the gang runs"
)

// HoldMargin is how long before its reservation ends a hold is ended by
// gangtopo with the gang still waiting: a quarter of the hold, at most 30
// s. `defrag apply` waits at most defrag.hold minus it.
func HoldMargin(hold time.Duration) time.Duration { return min(30*time.Second, hold/4) }

// ErrNotStarted says the gang did not start in time.
var ErrNotStarted = errors.New("the gang did not start in time")

// Release waits until deadline for the gang to run, then ends its hold:
// the gang is taken out of the reservation first, then it is deleted.
// An interrupted wait (ctx done) ends the hold too.
func (x *Executor) Release(ctx context.Context, gang, name string, deadline time.Time) error {
	base := actuate.Entry{Gang: gang, Reservation: name}
	for {
		state, reason, ok, err := x.Slurm.Job(ctx, gang)
		switch {
		case err == nil && ok && state == "RUNNING":
			x.endHold(ctx, gang, name, base, "release", ReasonRuns)
			return nil
		case err == nil && (!ok || state != "PENDING"):
			ended := x.endHold(ctx, gang, name, base, "release", fmt.Sprintf("the gang is %s, not pending", orGone(state, ok)))
			return fmt.Errorf("job %s is %s: %w; %s", gang, orGone(state, ok), ErrNotStarted, ended)
		case ctx.Err() != nil:
			ended := x.endHold(ctx, gang, name, base, "release", "interrupted while waiting for the gang")
			return fmt.Errorf("interrupted while job %s waits: %s, the gang keeps waiting", gang, ended)
		case !x.Now().Before(deadline):
			ended := x.endHold(ctx, gang, name, base, "release", fmt.Sprintf("the gang did not start by %s (%s, %s)",
				deadline.Format(time.RFC3339), state, reason))
			return fmt.Errorf("job %s still %s (%s) at %s: %w; %s, the gang keeps waiting", gang, state, reason,
				deadline.Format(time.RFC3339), ErrNotStarted, ended)
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

// endHold takes the gang out of the reservation (while it is pending or
// running: a reservation that ends with its gang running inside ends the
// gang, were the hold not FLEX) and deletes the reservation, through the
// door; action names the deletion's audit line (release, abandon). It
// says how that went, in words for a message: "the hold is ended", or why
// not and what then happens. An interrupted caller's hold is ended all
// the same (the commands run on a context of their own).
func (x *Executor) endHold(ctx context.Context, gang, name string, base actuate.Entry, action, why string) string {
	ctx, cancel := cleanupContext(ctx, x.Cfg.Timeout)
	defer cancel()
	base.Reason = why
	var errs []string
	state, _, ok, err := x.Slurm.Job(ctx, gang)
	if err != nil || ok && (state == "PENDING" || state == "RUNNING") {
		if _, err := x.do(ctx, detachChange(base, gang)); err != nil {
			errs = append(errs, "taking job "+gang+" out: "+err.Error())
		}
	}
	if _, err := x.do(ctx, endChange(base, action, name)); err != nil {
		errs = append(errs, "deleting it: "+err.Error())
		msg := fmt.Sprintf("the hold %s could not be ended (%s); Slurm ends it when it runs out, leaving job %s alone then (%s), or end it now by hand: scontrol update JobId=%s ReservationName= ; scontrol delete ReservationName=%s",
			name, strings.Join(errs, "; "), gang, HoldFlags, gang, name)
		x.alarmf("%s", msg)
		return msg
	}
	x.logf("%s hold %s of job %s: ok (%s)", action, name, gang, why)
	return "the hold is ended"
}

// cleanupContext is the context undoing runs on: ctx, or, once ctx is
// done (an interrupt, a shutdown), a fresh one that still allows a few
// commands.
func cleanupContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), 4*max(timeout, time.Second))
}

// alarmf reports what leaves something of gangtopo's behind.
func (x *Executor) alarmf(format string, args ...any) {
	if x.Alarmf != nil {
		x.Alarmf(format, args...)
		return
	}
	x.logf(format, args...)
}
