package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The controller's quota duty (gangtopo.yaml's quota: section,
// docs/quota.md), one round after each published snapshot; every change
// through the door (actuate.Door: leader, audit line first, limits,
// back-off):
//
//  1. Check that Slurm enforces what the quotas rest on
//     (AccountingStorageEnforce with limits and qos, read from `scontrol
//     show config` at most once a minute), read Slurm's accounting
//     (sacctmgr: the QOS and the associations) and check it against
//     gangtopo.yaml (quotaexec.Check: accounts, gangtopo's own QOS, no
//     grant of the borrow or reclaim QOS). While a check fails or sacctmgr
//     fails, nothing is changed: the limits in force stay, no job is
//     moved, and the error is logged every cycle.
//  2. Plan the cycle (quotaexec.Plan) from what runs and what waits: the
//     ledger, the QOS limits, the waiting jobs to move between their
//     account's own QOS and the borrow QOS.
//  3. Bring the limits to the plan (quotaexec.Steps: lowered at once,
//     raised at most once per raise_interval per QOS, the reclaim QOS's
//     cap at once), one sacctmgr command per change; the first that
//     fails ends the cycle: no job is moved on limits that are not what
//     the plan counted on.
//  4. Move the waiting jobs (scontrol update JobId= QOS=), at most
//     quota.max_per_cycle updates a cycle (moves and pins together) and a
//     job not again within job_interval.
//  5. Put back a waiting job left in the reclaim QOS without its pin (its
//     mark gone): it would preempt wherever its node list allows.
//  6. Reclaim (see reclaim) for the waiting jobs within their share.
//
// A pin that did not start its job within pin_timeout expires: whoever
// leads then undoes it (pins.go), and released counts it here. With
// quota.enabled false the duty changes nothing: the pins are undone
// (pins.go); the QOS limits stay as they were last set (quota off puts
// the rest back).

// QuotaSetup turns the duty on: gangtopo.yaml (re-read when it changes)
// and how to read Slurm's accounting and configuration.
type QuotaSetup struct {
	ConfigPath string
	Config     ctld.Config
	Sacctmgr   quotaexec.Sacctmgr
	// ShowConfig runs `scontrol show config` (AccountingStorageEnforce).
	ShowConfig func(ctx context.Context) (string, error)
}

type quotaDuty struct {
	setup QuotaSetup
	door  *actuate.Door
	log   zerolog.Logger
	m     *quotaMetrics
	now   func() time.Time

	cfg       ctld.Config
	lastRaise map[string]time.Time // QOS -> its last raised limit
	moved     map[string]time.Time // job -> when it was last moved or pinned
	enforce   error                // CheckEnforce's answer, read at enforceAt
	enforceAt time.Time
}

func newQuotaDuty(setup QuotaSetup, door *actuate.Door, log zerolog.Logger, reg prometheus.Registerer, now func() time.Time) *quotaDuty {
	return &quotaDuty{setup: setup, door: door, log: log.With().Str("duty", "quota").Logger(), m: newQuotaMetrics(reg), now: now,
		cfg: setup.Config, lastRaise: map[string]time.Time{}, moved: map[string]time.Time{}}
}

// cycle runs the duty on this cycle's snapshot and poll.
func (q *quotaDuty) cycle(ctx context.Context, gt ctld.Config, s *occupancy.Snapshot, st *slurmstate.State, meter *frag.Meter) {
	q.cfg = gt
	cfg := q.cfg.Quota
	if !cfg.Enabled {
		return
	}
	now := q.now()
	if err := q.enforced(ctx, now); err != nil {
		q.fail("check", err, "Slurm does not enforce what the quotas rest on; nothing is changed until it does")
		return
	}
	acc, err := q.setup.Sacctmgr.Read(ctx)
	if err != nil {
		q.fail("read", err, "sacctmgr failed; the limits in force stay, no job is moved")
		return
	}
	obs := quotaexec.Observe(s, st, meter)
	if err := quotaexec.Check(cfg, obs.GPUs, acc); err != nil {
		q.fail("check", err, "Slurm's accounting disagrees with gangtopo.yaml; nothing is changed until it is mended (gangtopo quota sync)")
		return
	}
	for _, u := range obs.Unreadable {
		q.log.Warn().Str("job", u).Msg("quota: a waiting job's GPUs could not be read; it is not counted")
	}
	c := quotaexec.Plan(cfg, obs.GPUs, obs.Run, obs.Wait, obs.Frag)
	q.m.observe(&c)
	if !q.limits(ctx, acc, c.Limits, now) {
		return
	}
	w := quotaWork{budget: cfg.MaxPerCycle, reclaimCap: c.Limits[cfg.ReclaimQOS]}
	q.move(ctx, c.Moves, now, &w)
	q.strays(ctx, st, now, &w)
	if c.Ledger.Borrowed > 0 {
		q.reclaim(ctx, s, st, &c, now, &w)
	}
	q.forget(now)
}

// quotaWork is what is left of a cycle's changes: quota.max_per_cycle
// less the updates made, the reclaim QOS's cap as it is now, and whether
// the door said to stop.
type quotaWork struct {
	budget     int
	reclaimCap int
	stopped    bool
}

// more says whether another job update may be made this cycle.
func (w *quotaWork) more() bool { return !w.stopped && w.budget > 0 }

// enforced is CheckEnforce on `scontrol show config`, read at most once
// a minute; a read that fails keeps the last answer (none yet: not known,
// so not acted on).
func (q *quotaDuty) enforced(ctx context.Context, now time.Time) error {
	if q.setup.ShowConfig == nil {
		return errors.New("the controller cannot read slurm.conf (scontrol show config): AccountingStorageEnforce not known")
	}
	if !q.enforceAt.IsZero() && now.Sub(q.enforceAt) < time.Minute {
		return q.enforce
	}
	out, err := q.setup.ShowConfig(ctx)
	switch {
	case err != nil && q.enforceAt.IsZero():
		return errors.New("scontrol show config failed: whether AccountingStorageEnforce holds limits and qos is not known: " + err.Error())
	case err != nil:
		return q.enforce
	}
	q.enforce, q.enforceAt = quotaexec.CheckEnforce(out), now
	return q.enforce
}

// limits is step 3; false when a change failed or the door refused it
// (but for a dry run): the cycle then changes nothing more.
func (q *quotaDuty) limits(ctx context.Context, acc *quotaexec.Accounting, want quotaexec.Limits, now time.Time) bool {
	cfg := q.cfg.Quota
	steps, held := quotaexec.Steps(acc, want, q.lastRaise, now, cfg.RaiseInterval, cfg.ReclaimQOS)
	for _, h := range held {
		q.log.Debug().Str("qos", h).Int("want", want[h]).Msg("quota: raise held by the rate limit")
	}
	for _, c := range steps {
		if !q.limit(ctx, c, now) {
			return false
		}
	}
	return true
}

// limit makes one limit change; false when the cycle must stop.
func (q *quotaDuty) limit(ctx context.Context, c quotaexec.Change, now time.Time) bool {
	_, err := q.door.Do(ctx, c.Door("limit", "quota", q.cfg.Quota.Timeout, false))
	switch {
	case errors.Is(err, actuate.ErrDryRun):
		return true
	case err != nil:
		q.fail("limit", err, "changing a QOS limit failed or was refused; the limits in force stay and nothing more is changed this cycle")
		return false
	}
	if c.To > c.From && c.From >= 0 {
		q.lastRaise[c.QOS] = now
	}
	q.m.changes.WithLabelValues("limit").Inc()
	q.log.Info().Str("qos", c.QOS).Int("from", c.From).Int("to", c.To).Str("command", c.String()).Msg("quota: QOS limit changed")
	return true
}

// job makes one job update through the door: whether it was made, and
// w.stopped set when the door says no more this cycle.
func (q *quotaDuty) job(ctx context.Context, c actuate.Change, w *quotaWork, step string) bool {
	c.Timeout = q.cfg.Quota.Timeout
	_, err := q.door.Do(ctx, c)
	if err == nil {
		w.budget--
		return true
	}
	switch {
	case stopsCycle(err):
		w.stopped = true
	case actuate.Refused(err): // a dry run, a back-off: not made, the next may be
	default:
		w.budget-- // an update that ran counts, made or not
	}
	if !errors.Is(err, actuate.ErrDryRun) {
		q.fail(step, err, "a job update of the quota duty was not made")
	}
	return false
}

// stopsCycle says whether the door's answer ends the cycle's changes.
func stopsCycle(err error) bool {
	for _, e := range []error{actuate.ErrLimit, actuate.ErrBusy, actuate.ErrNotLeader, actuate.ErrOff, actuate.ErrAudit, slurmstate.ErrUpdateTimeout} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// move is step 4.
func (q *quotaDuty) move(ctx context.Context, moves []quotaexec.Move, now time.Time, w *quotaWork) {
	for _, mv := range moves {
		if !w.more() {
			return
		}
		if t, ok := q.moved[mv.Job.Target]; ok && now.Sub(t) < q.cfg.Quota.JobInterval {
			continue
		}
		q.moved[mv.Job.Target] = now
		c := actuate.Change{Entry: actuate.Entry{Action: "qos", Job: mv.Job.Target, QOS: mv.To, GPUs: mv.Job.GPUs, Duty: "quota",
			Reason: "from " + mv.From + moveWhy(mv)}, Cmd: "scontrol", Args: []string{"update", "JobId=" + mv.Job.Target, "QOS=" + mv.To}}
		if !q.job(ctx, c, w, "move") {
			continue
		}
		q.m.changes.WithLabelValues("move").Inc()
		q.log.Info().Str("job", mv.Job.Target).Str("account", mv.Job.Account).Int("gpus", mv.Job.GPUs).
			Str("from", mv.From).Str("to", mv.To).Bool("borrowing", mv.Borrowing).Msg("quota: waiting job moved")
	}
}

func moveWhy(mv quotaexec.Move) string {
	switch {
	case mv.Borrowing:
		return ": beyond its account's share, on lent GPUs (preemptible)"
	case mv.Job.NoRequeue:
		return ": Slurm may not requeue it, so it does not borrow; it waits for its account's share"
	}
	return ": within its account's share"
}

// strays is step 5: a waiting job in the reclaim QOS that carries no pin
// of the quota's (its mark was taken out while its node list was no
// longer the pin's, or someone put it there) goes back to its account's
// own QOS: only a pinned job may preempt borrowed jobs.
func (q *quotaDuty) strays(ctx context.Context, st *slurmstate.State, now time.Time, w *quotaWork) {
	cfg := q.cfg.Quota
	for _, pj := range st.Queued {
		if m, ok := actuate.ParseMark(pj.Facts.AdminComment); pj.Facts.QOS != cfg.ReclaimQOS || ok && m.By == "quota" || !w.more() {
			continue
		}
		own := cfg.QOSOf(pj.Facts.Account)
		c := actuate.Change{Entry: actuate.Entry{Action: "qos", Job: pj.Target, QOS: own, Duty: "quota",
			Reason: "waiting in the reclaim QOS without a reclaim pin: back to its account's own QOS"},
			Cmd: "scontrol", Args: []string{"update", "JobId=" + pj.Target, "QOS=" + own}, Undo: true}
		if q.job(ctx, c, w, "release") {
			q.moved[pj.Target] = now
			q.m.changes.WithLabelValues("release").Inc()
			q.log.Info().Str("job", pj.Target).Str("qos", own).Msg("quota: a job in the reclaim QOS without its pin put back in its own QOS")
		}
	}
}

// reclaim is step 6: each waiting job within its share that does not fit
// now, while others borrow, gets a reclaim plan (defragrun.Planner.Reclaim:
// borrowed jobs only, the shape it needs, the least work lost) and is
// pinned: moved to the reclaim QOS with its node list the plan's nodes and
// the pin's mark (expiry pin_timeout from now, its own QOS to go back to),
// in one update. Slurm's preempt/qos then requeues the borrowed jobs there
// and nowhere else. Just before, the reclaim QOS's cap is raised by the
// job's GPUs (its limit is what the controller put there); if the pin then
// fails, the next cycle lowers it again.
//
// The jobs are planned one after another on one poll: after each pin
// (made, refused or failed alike: the cautious side) its nodes count as
// taken, its victims as requeued and the job as running in its share
// (defragrun.View.Pinned), so no two jobs are pinned to the same nodes or
// count on the same victims, and no account is taken below its share.
func (q *quotaDuty) reclaim(ctx context.Context, s *occupancy.Snapshot, st *slurmstate.State, c *quotaexec.Cycle, now time.Time, w *quotaWork) {
	p, err := defragrun.NewPlanner(q.cfg, s.Cluster, nil)
	if err != nil {
		q.fail("reclaim", err, "no reclaim planner this cycle")
		return
	}
	v := defragrun.NewView(s, st, now)
	l := c.Ledger
	l.Accounts = slices.Clone(l.Accounts) // counted on below: the cycle's stays as planned
	byTarget := map[string]slurmstate.PendingJob{}
	for _, pj := range st.Queued {
		byTarget[pj.Target] = pj
	}
	for _, j := range c.Entitled {
		if !w.more() {
			return
		}
		pj, ok := byTarget[j.Target]
		if t, moved := q.moved[j.Target]; !ok || moved && now.Sub(t) < q.cfg.Quota.JobInterval || pj.Job.ReqNodes != "" {
			continue
		}
		plan, found, err := p.Reclaim(v, pj, &l, q.cfg.Quota.BorrowQOS)
		if err != nil || !found || plan.FitsNow {
			continue
		}
		q.pin(ctx, j, pj, plan, now, w)
		v.Pinned(plan, &l, j.Account, j.GPUs)
	}
}

// pin raises the reclaim QOS's cap and pins one job (see reclaim).
func (q *quotaDuty) pin(ctx context.Context, j quotaexec.WaitJob, pj slurmstate.PendingJob, plan defragrun.ReclaimPlan, now time.Time, w *quotaWork) {
	cfg := q.cfg.Quota
	q.moved[j.Target] = now
	if !q.limit(ctx, quotaexec.LimitChange(cfg.ReclaimQOS, w.reclaimCap, w.reclaimCap+j.GPUs), now) {
		w.stopped = true
		return
	}
	w.reclaimCap += j.GPUs
	mark := actuate.Mark{By: "quota", Nodes: plan.Nodes, Until: now.Add(cfg.PinTimeout), QOS: cfg.QOSOf(j.Account)}
	ch := actuate.PinChange(actuate.Entry{Duty: "quota", QOS: cfg.ReclaimQOS, GPUs: j.GPUs, Domain: plan.Domain,
		Reason: "reclaim borrowed GPUs: Slurm requeues " + strings.Join(plan.Victims, ",")}, j.Target, pj.Facts.AdminComment, mark,
		"QOS="+cfg.ReclaimQOS)
	if !q.job(ctx, ch, w, "reclaim") {
		return
	}
	q.m.changes.WithLabelValues("reclaim").Inc()
	q.log.Info().Str("job", j.Target).Str("account", j.Account).Int("gpus", j.GPUs).Str("nodes", plan.Nodes).
		Str("domain", plan.Domain).Strs("victims", plan.Victims).Str("qos", cfg.ReclaimQOS).Time("until", mark.Until).
		Msg("quota: entitled job pinned to reclaim borrowed GPUs")
}

// released is told of each quota pin the controller undid (pins.go): the
// pin expired, or quotas were switched off.
func (q *quotaDuty) released(p actuate.Pin, why string, err error) {
	if err != nil {
		if !actuate.Refused(err) {
			q.fail("release", err, "taking out an expired reclaim pin failed; it is tried again after its back-off")
		}
		return
	}
	q.moved[p.Job] = q.now()
	q.m.changes.WithLabelValues("release").Inc()
	q.log.Info().Str("job", p.Job).Str("nodes", p.Nodes).Str("qos", p.Mark.QOS).Time("until", p.Until).Str("why", why).
		Msg("quota: reclaim pin released; the job is planned again")
}

func (q *quotaDuty) fail(what string, err error, msg string) {
	q.m.errors.WithLabelValues(what).Inc()
	q.log.Error().Err(err).Msg("quota: " + msg)
}

// forget drops moves older than the job interval.
func (q *quotaDuty) forget(now time.Time) {
	for j, t := range q.moved {
		if now.Sub(t) >= q.cfg.Quota.JobInterval {
			delete(q.moved, j)
		}
	}
}
