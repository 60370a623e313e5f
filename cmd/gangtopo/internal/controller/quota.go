package controller

import (
	"context"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The controller's quota duty (gangtopo.yaml's quota: section,
// docs/quota.md), after each published snapshot:
//
//  1. Read Slurm's accounting (sacctmgr: the QOS and the associations)
//     and check it against gangtopo.yaml (quotaexec.Check). While the
//     check fails (an account Slurm does not know, a QOS missing, shares
//     past the cluster) or sacctmgr fails, nothing is changed: the limits
//     in force stay, no job is moved, and the error is logged every cycle.
//  2. Plan the cycle (quotaexec.Plan) from what runs and what waits: the
//     ledger, the QOS limits, the waiting jobs to move between their
//     account's own QOS and the borrow QOS.
//  3. Bring the limits to the plan (quotaexec.Steps: lowered at once,
//     raised at most once per raise_interval per QOS), one sacctmgr
//     command per change, each logged; the first that fails ends the
//     cycle's changes.
//  4. Move the waiting jobs (scontrol update JobId= QOS=), at most
//     max_per_cycle a cycle and a job not again within job_interval, each
//     logged.
//  5. Reclaim (see reclaim) for the waiting jobs within their share.
//  6. Release the pins that did not start their job within pin_timeout
//     (see release).
//  7. Publish the ledger as metrics (done before the changes).

// QuotaSetup turns the duty on: gangtopo.yaml (re-read when it changes)
// and how to reach Slurm.
type QuotaSetup struct {
	ConfigPath string
	Config     ctld.Config
	Sacctmgr   quotaexec.Sacctmgr
	// Update runs scontrol update JobId=job with args ("QOS=...",
	// "ReqNodeList=...").
	Update func(ctx context.Context, job string, args ...string) error
}

type quotaDuty struct {
	setup QuotaSetup
	log   zerolog.Logger
	m     *quotaMetrics
	now   func() time.Time

	cfg       ctld.Config
	stamp     time.Time
	lastRaise map[string]time.Time // QOS -> its last raised limit
	moved     map[string]time.Time // job -> when it was last moved
	pinned    map[string]time.Time // job -> when it was pinned (or first seen pinned)
}

func newQuotaDuty(setup QuotaSetup, log zerolog.Logger, reg prometheus.Registerer, now func() time.Time) *quotaDuty {
	q := &quotaDuty{setup: setup, log: log.With().Str("duty", "quota").Logger(), m: newQuotaMetrics(reg), now: now,
		cfg: setup.Config, lastRaise: map[string]time.Time{}, moved: map[string]time.Time{}, pinned: map[string]time.Time{}}
	if fi, err := os.Stat(setup.ConfigPath); err == nil {
		q.stamp = fi.ModTime()
	}
	return q
}

// cycle runs the duty on this cycle's snapshot and poll.
func (q *quotaDuty) cycle(ctx context.Context, s *occupancy.Snapshot, st *slurmstate.State, meter *frag.Meter) {
	q.reloadConfig()
	cfg := q.cfg.Quota
	if !cfg.Enabled {
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
	now := q.now()
	if !q.limits(ctx, acc, c.Limits, now) {
		return
	}
	done := q.move(ctx, c.Moves, now)
	if c.Ledger.Borrowed > 0 {
		done = q.reclaim(ctx, s, st, &c, now, done)
	}
	q.release(ctx, st, now, done)
	q.forget(now)
}

// limits is step 3; false when a change failed.
func (q *quotaDuty) limits(ctx context.Context, acc *quotaexec.Accounting, want quotaexec.Limits, now time.Time) bool {
	steps, held := quotaexec.Steps(acc, want, q.lastRaise, now, q.cfg.Quota.RaiseInterval)
	for _, h := range held {
		q.log.Debug().Str("qos", h).Int("want", want[h]).Msg("quota: raise held by the rate limit")
	}
	for _, c := range steps {
		if err := q.setup.Sacctmgr.Apply(ctx, c); err != nil {
			q.fail("limit", err, "changing a QOS limit failed; the limits in force stay")
			return false
		}
		if c.To > c.From && c.From >= 0 {
			q.lastRaise[c.QOS] = now
		}
		q.m.changes.WithLabelValues("limit").Inc()
		q.log.Info().Str("qos", c.QOS).Int("from", c.From).Int("to", c.To).Str("command", c.String()).Msg("quota: QOS limit changed")
	}
	return true
}

// move is step 4; it returns the updates made.
func (q *quotaDuty) move(ctx context.Context, moves []quotaexec.Move, now time.Time) int {
	done := 0
	for _, mv := range moves {
		if done >= q.cfg.Quota.MaxPerCycle {
			break
		}
		if t, ok := q.moved[mv.Job.Target]; ok && now.Sub(t) < q.cfg.Quota.JobInterval {
			continue
		}
		q.moved[mv.Job.Target] = now
		done++
		if err := q.setup.Update(ctx, mv.Job.Target, "QOS="+mv.To); err != nil {
			q.fail("move", err, "moving a waiting job to another QOS failed")
			continue
		}
		q.m.changes.WithLabelValues("move").Inc()
		q.log.Info().Str("job", mv.Job.Target).Str("account", mv.Job.Account).Int("gpus", mv.Job.GPUs).
			Str("from", mv.From).Str("to", mv.To).Bool("borrowing", mv.Borrowing).Msg("quota: waiting job moved")
	}
	return done
}

// reclaim is step 5: each waiting job within its share that does not fit
// now, while others borrow, gets a reclaim plan (defragrun.Planner.Reclaim:
// borrowed jobs only, the shape it needs, the least work lost) and is moved
// to the reclaim QOS pinned (ReqNodeList) to the plan's nodes: Slurm's
// preempt/qos then requeues the borrowed jobs there and nowhere else.
func (q *quotaDuty) reclaim(ctx context.Context, s *occupancy.Snapshot, st *slurmstate.State, c *quotaexec.Cycle, now time.Time, done int) int {
	p, err := defragrun.NewPlanner(q.cfg, s.Cluster, nil)
	if err != nil {
		q.fail("reclaim", err, "no reclaim planner this cycle")
		return done
	}
	v := defragrun.NewView(s, st, now)
	byTarget := map[string]slurmstate.PendingJob{}
	for _, pj := range st.Queued {
		byTarget[pj.Target] = pj
	}
	for _, j := range c.Entitled {
		if done >= q.cfg.Quota.MaxPerCycle {
			return done
		}
		pj, ok := byTarget[j.Target]
		if t, moved := q.moved[j.Target]; !ok || moved && now.Sub(t) < q.cfg.Quota.JobInterval || pj.Job.ReqNodes != "" {
			continue
		}
		plan, found, err := p.Reclaim(v, pj, &c.Ledger, q.cfg.Quota.BorrowQOS)
		if err != nil || !found || plan.FitsNow {
			continue
		}
		q.moved[j.Target] = now
		q.pinned[j.Target] = now
		done++
		err = q.setup.Update(ctx, j.Target, "QOS="+q.cfg.Quota.ReclaimQOS, "ReqNodeList="+plan.Nodes)
		if err != nil {
			q.fail("reclaim", err, "moving an entitled job to the reclaim QOS failed; nothing is preempted for it")
			continue
		}
		q.m.changes.WithLabelValues("reclaim").Inc()
		q.log.Info().Str("job", j.Target).Str("account", j.Account).Int("gpus", j.GPUs).Str("nodes", plan.Nodes).
			Str("domain", plan.Domain).Strs("victims", plan.Victims).Str("qos", q.cfg.Quota.ReclaimQOS).
			Msg("quota: entitled job pinned to reclaim borrowed GPUs")
	}
	return done
}

// release is step 6: an entitled job pinned to a reclaim plan's nodes
// (in the reclaim QOS, with a node list) that has not started within
// pin_timeout goes back to its account's own QOS with its node list
// cleared, to be planned again (the victims may have ended and others
// taken the nodes). A job found pinned that this controller did not pin
// (it restarted) is timed from when it is first seen.
func (q *quotaDuty) release(ctx context.Context, st *slurmstate.State, now time.Time, done int) {
	cfg := q.cfg.Quota
	seen := map[string]bool{}
	for _, pj := range st.Queued {
		if pj.Facts.QOS != cfg.ReclaimQOS || pj.Job.ReqNodes == "" {
			continue
		}
		seen[pj.Target] = true
		since, ok := q.pinned[pj.Target]
		if !ok {
			q.pinned[pj.Target] = now
			continue
		}
		if now.Sub(since) < cfg.PinTimeout || done >= cfg.MaxPerCycle {
			continue
		}
		done++
		if q.unpin(ctx, pj, now, "quota: reclaim pin released; the job is planned again") != nil {
			continue
		}
		q.moved[pj.Target] = now
	}
	for j := range q.pinned {
		if !seen[j] {
			delete(q.pinned, j) // started, or left the reclaim QOS
		}
	}
}

// unpin puts a job pinned to a reclaim plan back in its account's own QOS
// with its node list cleared, logging msg.
func (q *quotaDuty) unpin(ctx context.Context, pj slurmstate.PendingJob, now time.Time, msg string) error {
	own := q.cfg.Quota.QOSOf(pj.Facts.Account)
	if err := q.setup.Update(ctx, pj.Target, "QOS="+own, "ReqNodeList="); err != nil {
		q.fail("release", err, "releasing a reclaim pin failed; the job stays pinned")
		return err
	}
	since := q.pinned[pj.Target]
	delete(q.pinned, pj.Target)
	q.m.changes.WithLabelValues("release").Inc()
	q.log.Info().Str("job", pj.Target).Str("account", pj.Facts.Account).Str("nodes", pj.Job.ReqNodes).
		Str("qos", own).Dur("pinned_for", now.Sub(since)).Msg(msg)
	return nil
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

func (q *quotaDuty) reloadConfig() {
	fi, err := os.Stat(q.setup.ConfigPath)
	if err != nil || fi.ModTime().Equal(q.stamp) {
		return
	}
	q.stamp = fi.ModTime()
	cfg, err := ctld.LoadConfig(q.setup.ConfigPath)
	if err != nil {
		q.log.Error().Err(err).Msg("gangtopo.yaml changed but does not load; the quota keeps the previous configuration")
		return
	}
	q.cfg = cfg
}

// quotaMetrics are the duty's Prometheus series: the ledger per account,
// the changes made and the errors.
type quotaMetrics struct {
	account        *prometheus.GaugeVec
	pool, borrowed prometheus.Gauge
	changes        *prometheus.CounterVec
	errors         *prometheus.CounterVec
}

func newQuotaMetrics(reg prometheus.Registerer) *quotaMetrics {
	m := &quotaMetrics{
		account: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gangtopo_quota_gpus",
			Help: "Each account's quota ledger in GPUs, by figure: guaranteed, in_use, borrowed, lent, waiting, frag (stranded GPUs its jobs cause), charge (frag x weight, counted against the share)."}, []string{"account", "figure"}),
		pool:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_quota_pool_gpus", Help: "GPUs the lending accounts may lend now."}),
		borrowed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_quota_borrowed_gpus", Help: "GPUs held beyond the accounts' shares."}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_quota_changes_total",
			Help: "Changes the quota duty made in Slurm, by kind: limit (a QOS GrpTRES), move (a waiting job to another QOS), reclaim (an entitled job to the reclaim QOS, pinned), release (a stale pin undone)."}, []string{"kind"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_quota_errors_total",
			Help: "Quota cycles that changed nothing or stopped, by step: read, check, limit, move, reclaim, release."}, []string{"step"}),
	}
	reg.MustRegister(m.account, m.pool, m.borrowed, m.changes, m.errors)
	return m
}

func (m *quotaMetrics) observe(c *quotaexec.Cycle) {
	m.account.Reset()
	for _, u := range c.Ledger.Accounts {
		for fig, v := range map[string]float64{"guaranteed": float64(u.Guaranteed), "in_use": float64(u.InUse),
			"borrowed": float64(u.Borrowed), "lent": float64(u.Lent), "waiting": float64(u.Waiting), "frag": u.Frag, "charge": u.Charge} {
			m.account.WithLabelValues(u.Account, fig).Set(v)
		}
	}
	m.pool.Set(float64(c.Ledger.Pool))
	m.borrowed.Set(float64(c.Ledger.Borrowed))
}
