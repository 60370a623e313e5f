package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Restarting a requeued gang at once (rebind.restart_at_once).
//
// When Slurm finishes requeueing a batch job (batch_requeue_fini) it sets
// the job's submit time to now and, unless the job's begin time is later
// already, its begin time to now plus the requeue delay plus one second:
// the job credential's lifetime (120 s by default) on 22.05 and 24.11,
// SchedulerParameters=requeue_delay where set on later series, none for a
// job of 25.11+'s expedited requeue. For that while the gang may not
// start, and the healthy nodes it ran on, with its domain's spare, are
// free to every other job: a gang bound to its old leaf then often finds
// the leaf taken when it may start.
//
// With restart_at_once the controller makes such a gang eligible at once
// (`scontrol update JobId=<id> StartTime=now`, as defrag.expedite does for
// the jobs a plan requeues), once per restart, after its restart binding
// is settled (failure.go: kept, or re-bound by an update Slurm took), so
// that Slurm starts it where the controller bound it. A job is made
// eligible only when
//
//   - it is a gang requeued after a node failure that the failure
//     re-binding settled at this restart count (only jobs the plugin
//     decided about, never a pinned one);
//   - Slurm has finished the requeue (it is pending, not completing: an
//     earlier update would be undone by the requeue's own begin time);
//   - its begin time is Slurm's requeue delay: later than now, and the
//     delay plus one second after its submit time, which the same requeue
//     set (the delay read from `scontrol show config`: RequeueDelay). A
//     begin time a user or administrator set after the requeue keeps the
//     submit time and moves the begin time from where Slurm put it: it is
//     left alone;
//   - it is not held (priority 0, or a hold reason);
//   - the requeue, at the submit time it set, is actuate.RequeueMargin old
//     (else it waits for a later round): a restart in the second of the
//     requeue's kill is refused by the nodes' slurmd and the job killed
//     for good (actuate/restart.go).
//
// The update goes through the door (audit first, leader only, the cycle's
// limit and back-off), counted in rebind.max_per_cycle. One that does not
// go through is not tried again at this restart count unless the door
// refused it (it is then tried at the next round): the job starts after
// Slurm's delay, as without gangtopo.

// DefaultRequeueDelay is Slurm's requeue delay where slurm.conf sets
// neither SchedulerParameters=requeue_delay nor AuthInfo=cred_expire: the
// job credential's default lifetime.
const DefaultRequeueDelay = 120 * time.Second

// RequeueDelay reads Slurm's requeue delay from `scontrol show config`:
// SchedulerParameters' requeue_delay= (later series), else AuthInfo's
// cred_expire=, else DefaultRequeueDelay.
func RequeueDelay(showConfig string) time.Duration {
	var credExpire, requeueDelay time.Duration
	for _, line := range strings.Split(showConfig, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		var dst *time.Duration
		key := ""
		switch strings.TrimSpace(k) {
		case "AuthInfo", "CredParameters":
			dst, key = &credExpire, "cred_expire"
		case "SchedulerParameters":
			dst, key = &requeueDelay, "requeue_delay"
		default:
			continue
		}
		for _, opt := range strings.Split(strings.TrimSpace(v), ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(opt), "=")
			if n, err := strconv.Atoi(val); ok && name == key && err == nil && n >= 0 {
				*dst = time.Duration(n) * time.Second
			}
		}
	}
	switch {
	case requeueDelay > 0:
		return requeueDelay
	case credExpire > 0:
		return credExpire
	}
	return DefaultRequeueDelay
}

// inRequeueDelay says whether pending job pj waits for Slurm's requeue
// delay at now: its begin time is later than now and exactly the delay
// plus one second after the submit time the same requeue set (the delay
// alone when Slurm moved that submit time a second on to keep it apart
// from the last).
func inRequeueDelay(pj slurmstate.PendingJob, now time.Time, delay time.Duration) bool {
	if pj.Eligible.IsZero() || pj.Submit.IsZero() || !pj.Eligible.After(now) {
		return false
	}
	d := pj.Eligible.Sub(pj.Submit)
	return d == delay+time.Second || d == delay
}

// restartAtOnce makes the settled gangs among pending eligible at once;
// updated counts the cycle's updates so far. It returns the count after
// its own, and whether the cycle's updates must stop (the door's limits,
// a timeout).
func (r *rebinder) restartAtOnce(ctx context.Context, pending []slurmstate.PendingJob, updated int) (int, bool) {
	if !r.cfg.Rebind.AfterFailure || !r.cfg.Rebind.RestartAtOnce {
		return updated, false
	}
	w := r.failures
	now := r.door.Now()
	for _, pj := range pending {
		n, settled := w.decided[pj.ID]
		if !settled || n != pj.Facts.Restarts || w.atOnce[pj.ID] >= n || !inRequeueDelay(pj, now, r.requeueDelay) {
			continue
		}
		if _, pinned := actuate.ParseMark(pj.Facts.AdminComment); pinned || pj.Priority == 0 || pj.Reason != "BeginTime" && notYet[pj.Reason] {
			continue
		}
		if !actuate.MayRestart(pj.Submit, now) {
			continue // a later round
		}
		if updated >= r.cfg.Rebind.MaxPerCycle {
			r.m.skipped.WithLabelValues("max_per_cycle").Inc()
			continue
		}
		updated++
		target := updateTarget(pj)
		why := fmt.Sprintf("requeued after a node failure: eligible now instead of at %s, Slurm's requeue delay (rebind.restart_at_once)",
			pj.Eligible.Local().Format("15:04:05"))
		_, err := r.door.Do(ctx, actuate.Change{Entry: actuate.Entry{Action: "expedite", Job: target, Duty: "rebind", Reason: why},
			Cmd: "scontrol", Args: []string{"update", "JobId=" + target, "StartTime=now"}, Timeout: r.cfg.Rebind.Timeout})
		switch {
		case err == nil:
			w.atOnce[pj.ID] = n
			w.m.atOnce.WithLabelValues("made").Inc()
			r.log.Info().Str("job", pj.ID).Int("restarts", n).Time("was_eligible_at", pj.Eligible).
				Msg("a gang requeued after a node failure may start at once")
		case actuate.Refused(err):
			w.m.atOnce.WithLabelValues("refused").Inc()
		default:
			w.atOnce[pj.ID] = n // not the same harm twice: it starts after Slurm's delay
			w.m.atOnce.WithLabelValues("failed").Inc()
			r.log.Warn().Err(err).Str("job", pj.ID).Msg("making a requeued gang eligible at once failed; it starts after Slurm's requeue delay")
		}
		if endsUpdates(err) {
			return updated, true
		}
	}
	return updated, false
}

// newAtOnceCounter is gangtopo_failure_restarts_at_once_total.
func newAtOnceCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_failure_restarts_at_once_total",
		Help: "Gangs requeued after a node failure made eligible at once instead of after Slurm's requeue delay (rebind.restart_at_once), by result: made, refused (the door did not make it; tried again) or failed."}, []string{"result"})
	reg.MustRegister(c)
	for _, r := range []string{"made", "refused", "failed"} {
		c.WithLabelValues(r)
	}
	return c
}
