package controller

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The controller's defragmentation duties (gangtopo.yaml's defrag:
// section, docs/defrag.md), after each published snapshot, every change
// through the door (actuate.Door: leader, audit line first, limits,
// back-off):
//
//  1. Tend the holds (defragrun.Executor.Tend): a reservation gangtopo
//     made for a gang, whoever made it, is ended once the gang runs (the
//     gang is taken out of it first), is gone, when the hold is about to
//     run out with the gang still waiting, when its plan did not go
//     through whole or was never carried out (its process was killed
//     between the hold and the requeues), and when actions are switched
//     off. `defrag apply --wait 0` leaves its hold to this. Slurm's
//     reservations are listed in a round only while a hold may be in
//     flight (the last listing kept one, a pending job is in one, or this
//     controller tried a plan since), and otherwise once a minute (a hold
//     another process made and left before attaching its gang; the hold's
//     own end covers the gap). While the section is off, holds are looked
//     for once a minute only.
//  2. The policy (defrag.auto, off by default): each pending gang of at
//     least min_gpus GPUs that has waited min_wait, waits for a reason a
//     requeue can fix (defragrun.Fixable), and is not backed off after an
//     earlier plan (defragrun.Backoff), oldest first (at most max_tries a
//     cycle, a gang no plan passed for not again within retry), gets a
//     plan (defragrun.Planner, the planner `defrag apply` uses); one
//     costing at most max_cost that the limits allow is carried out
//     (defragrun.Executor.Carry: hold, re-check on a fresh poll, requeue),
//     at most max_per_cycle a cycle. The controller does not wait for the
//     gang: step 1 of a later round ends the hold.
//  3. Topology-aware preemption (defrag.pin_preemption): where Slurm
//     preempts (PreemptType partition_prio or qos, PreemptMode REQUEUE or
//     CANCEL), a pending gang that does not fit now is pinned
//     (ReqNodeList, with a mark in its AdminComment: actuate.Mark, by
//     defrag, until now + defrag.pin_timeout) to the nodes of the cheapest
//     compact domain whose jobs Slurm may preempt for it; Slurm then
//     preempts there and nowhere else. The pin is undone when it expires
//     (pins.go), by whichever controller acts then; the gang is backed off
//     as after a plan.
//
// Nothing happens while the section names nothing that may be requeued
// and pins nothing, but the once-a-minute look for holds left from
// before.

// DefragSetup turns the duties on: gangtopo.yaml (re-read when it changes)
// and how to read Slurm.
type DefragSetup struct {
	ConfigPath string
	Config     ctld.Config
	Slurm      defragrun.Reader
	// Preemption reads Slurm's preemption rule (defragrun.Clients).
	Preemption func(ctx context.Context) (defrag.Preemption, error)
}

// observeFunc polls Slurm afresh (the re-check before a requeue).
type observeFunc func(ctx context.Context) (*defragrun.View, error)

type defragDuty struct {
	setup DefragSetup
	door  *actuate.Door
	log   zerolog.Logger
	m     *defragMetrics
	now   func() time.Time

	cfg     ctld.Config
	refused map[string]time.Time // gang -> when no plan passed for it
	eps     []defragrun.Episode  // the audit log's plans, read this cycle
	rule    defrag.Preemption
	ruleAt  time.Time
	tendAt  time.Time // when the holds were last looked for
	// kept: the holds the last look kept; tried: a plan was tried since
	// (its hold may be in Slurm)
	kept  int
	tried bool
}

// ruleEvery is how often Slurm's preemption rule is read again; idleTend
// how often holds are looked for while the section is off.
const (
	ruleEvery = 5 * time.Minute
	idleTend  = time.Minute
)

func newDefragDuty(setup DefragSetup, door *actuate.Door, log zerolog.Logger, reg prometheus.Registerer, now func() time.Time) *defragDuty {
	return &defragDuty{setup: setup, door: door, log: log, m: newDefragMetrics(reg), now: now, cfg: setup.Config,
		refused: map[string]time.Time{}}
}

// active says whether any duty is on.
func (d *defragDuty) active() bool {
	dc := d.cfg.Defrag
	return !dc.Scope.Empty() || dc.PinPreemption
}

func (d *defragDuty) executor() *defragrun.Executor {
	return &defragrun.Executor{Door: d.door, Slurm: d.setup.Slurm, Audit: actuate.Audit{Path: d.cfg.Actions.AuditLog},
		Cfg: d.cfg.Defrag, Now: d.now,
		Logf:   func(format string, args ...any) { d.log.Info().Str("duty", "defrag").Msgf(format, args...) },
		Alarmf: func(format string, args ...any) { d.log.Error().Str("duty", "defrag").Msgf(format, args...) }}
}

// tend ends the holds that are done; off: actions are switched off, every
// hold is put back. Slurm's reservations are listed (each listing is an
// RPC that can wait behind backfill's locks; the scale lab's sdiag counts
// them, docs/admin.md "A site of 1,000 nodes") once a minute, and every
// round while a duty is on and a hold may be in flight: the last listing kept one, a pending job is in one (pending),
// or a plan was tried since.
func (d *defragDuty) tend(ctx context.Context, cfg ctld.Config, off bool, now time.Time, pending []slurmstate.PendingJob) {
	d.cfg = cfg
	inFlight := d.kept > 0 || d.tried || inHold(pending)
	if now.Sub(d.tendAt) < idleTend && (!d.active() || off || !inFlight) {
		return
	}
	d.tendAt, d.tried = now, false
	kept, err := d.executor().Tend(ctx, defragrun.HoldMargin(d.cfg.Defrag.Hold), off)
	if err != nil {
		d.tried = true // look again next round
		d.log.Error().Err(err).Msg("defrag: listing gangtopo's holds failed; they are tended next round")
		return
	}
	d.kept = kept
	d.m.holds.Set(float64(kept))
}

// inHold says whether a pending job waits in one of gangtopo's holds.
func inHold(pending []slurmstate.PendingJob) bool {
	for _, pj := range pending {
		if strings.HasPrefix(pj.Facts.Reservation, defragrun.HoldPrefix) {
			return true
		}
	}
	return false
}

// cycle runs the policy and the pins on the view of this round (the holds
// were tended before).
func (d *defragDuty) cycle(ctx context.Context, cfg ctld.Config, v *defragrun.View, observe observeFunc) {
	d.cfg = cfg
	auto := d.cfg.Defrag.Auto.Enabled && !d.cfg.Defrag.Scope.Empty()
	if !auto && !d.cfg.Defrag.PinPreemption {
		return
	}
	p, err := d.planner(v)
	if err != nil {
		d.log.Error().Err(err).Msg("defrag: reading the audit log failed; no plan and no pin this round")
		return
	}
	x := d.executor()
	if auto {
		d.auto(ctx, v, p, x, observe)
	}
	if d.cfg.Defrag.PinPreemption {
		d.pin(ctx, v, p)
	}
	d.forget(v.At)
}

// candidates are the pending gangs that may be planned for now, in the
// order Slurm starts them (priority, then submit time).
func (d *defragDuty) candidates(v *defragrun.View, p *defragrun.Planner, minWait time.Duration, retry time.Duration) []defragrun.Gang {
	pending := append([]slurmstate.PendingJob(nil), v.Pending...)
	sort.SliceStable(pending, func(i, k int) bool {
		a, b := pending[i], pending[k]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Submit.Before(b.Submit)
	})
	var out []defragrun.Gang
	for _, pj := range pending {
		if !d.due(pj, v.At, minWait, retry) {
			continue
		}
		g, err := p.Gang(pj)
		if err != nil || g.Request.GPUs < d.cfg.Defrag.Auto.MinGPUs {
			continue
		}
		out = append(out, g)
	}
	return out
}

// due says whether a pending job may be planned for now: it waits for a
// reason a requeue can fix, is not in a hold or pinned, has waited
// minWait, no plan was refused for it within retry, and it is not backed
// off after a plan carried out for it.
func (d *defragDuty) due(pj slurmstate.PendingJob, now time.Time, minWait, retry time.Duration) bool {
	if _, pinned := actuate.ParseMark(pj.Facts.AdminComment); pinned || !defragrun.Fixable(pj.Reason) ||
		strings.HasPrefix(pj.Facts.Reservation, defragrun.HoldPrefix) || now.Sub(pj.Submit) < minWait {
		return false
	}
	if t, ok := d.refused[pj.ID]; ok && now.Sub(t) < retry {
		return false
	}
	base, cap := d.backoff()
	return !now.Before(defragrun.Backoff(d.eps, pj.ID, base, cap, now))
}

// backoff is the back-off's base (defrag.auto.retry, else defrag.hold)
// and cap (defrag.requeue_window, at least the base).
func (d *defragDuty) backoff() (base, cap time.Duration) {
	base = d.cfg.Defrag.Auto.Retry
	if base <= 0 {
		base = d.cfg.Defrag.Hold
	}
	return base, max(d.cfg.Defrag.Limits.Window, base)
}

// auto is the policy: plan for the due gangs, carry out what passes.
func (d *defragDuty) auto(ctx context.Context, v *defragrun.View, p *defragrun.Planner, x *defragrun.Executor, observe observeFunc) {
	a := d.cfg.Defrag.Auto
	gangs := d.candidates(v, p, a.MinWait, a.Retry)
	d.m.candidates.Set(float64(len(gangs)))
	carried := 0
	for i, g := range gangs {
		if i >= a.MaxTries || carried >= a.MaxPerCycle || ctx.Err() != nil {
			break
		}
		pr, ok := p.Propose(v, g, nil)
		if reason := d.refusal(pr, ok); reason != "" {
			d.refused[g.Job.ID] = v.At
			d.m.refused.WithLabelValues(reason).Inc()
			continue
		}
		d.tried = true // its hold is tended from the next round on
		done, stop := d.carry(ctx, p, pr, x, observe)
		if stop {
			return
		}
		if done {
			carried++
			var err error
			if v, err = observe(ctx); err != nil { // the cluster changed: plan the next gang on it
				return
			}
		}
	}
}

// refusal says why a proposal is not carried out ("" when it is).
func (d *defragDuty) refusal(pr *defragrun.Proposal, ok bool) string {
	var le *defrag.LimitError
	switch {
	case !ok || pr.FitsNow:
		return "no_plan" // (a gang that fits now is Slurm's to start)
	case d.cfg.Defrag.Auto.MaxCost > 0 && pr.Plan.Cost > d.cfg.Defrag.Auto.MaxCost:
		return "cost"
	case errors.As(pr.Limit, &le):
		return le.Limit
	case pr.Limit != nil:
		return "budget"
	}
	return ""
}

// carry carries one proposal out, re-checking on a fresh poll; stop says
// the door refuses more this round (busy, limit, audit log, off).
func (d *defragDuty) carry(ctx context.Context, p *defragrun.Planner, pr *defragrun.Proposal, x *defragrun.Executor, observe observeFunc) (done, stop bool) {
	d.log.Info().Str("gang", pr.Gang.Job.ID).Str("domain", pr.Domain).Int("victims", len(pr.Victims)).
		Float64("cost", pr.Plan.Cost).Float64("lost_gpu_hours", pr.Lost).Msg("defrag: carrying a plan out for a waiting gang")
	domain := pr.Plan.Domain
	recheck := func(ctx context.Context) (*defragrun.Proposal, bool, error) {
		v, err := observe(ctx)
		if err != nil {
			return nil, false, err
		}
		pr2, ok := p.Propose(v, pr.Gang, []topology.DomainID{domain})
		return pr2, ok, nil
	}
	out, err := x.Carry(ctx, pr, recheck)
	var se *defragrun.StaleError
	switch {
	case err == nil:
		d.m.plans.WithLabelValues("carried").Inc()
		d.m.requeues.Add(float64(len(out.Requeued)))
		d.m.lost.Add(pr.Lost)
		return true, false
	case errors.Is(err, defragrun.ErrNoRoom) || out == nil && actuate.Refused(err):
		d.m.plans.WithLabelValues("refused").Inc()
		d.log.Warn().Err(err).Str("gang", pr.Gang.Job.ID).Msg("defrag: the door refused a change of the plan (busy, a limit, the audit log, switched off); nothing was requeued, and a hold made for it was ended")
		return false, true
	case errors.As(err, &se):
		d.m.plans.WithLabelValues("stale").Inc()
	default:
		d.m.plans.WithLabelValues("failed").Inc()
		if out != nil { // nil: the hold itself was not made
			d.m.requeues.Add(float64(len(out.Requeued)))
		}
	}
	d.refused[pr.Gang.Job.ID] = d.now()
	d.log.Warn().Err(err).Str("gang", pr.Gang.Job.ID).Msg("defrag: a plan was not carried out")
	return false, actuate.Refused(err)
}

// planner is the planner of this cycle, with the audit log's history; the
// log's plans are kept for the back-off (d.eps).
func (d *defragDuty) planner(v *defragrun.View) (*defragrun.Planner, error) {
	audit := actuate.Audit{Path: d.cfg.Actions.AuditLog}
	h, eps, bad, err := defragrun.ReadHistory(audit, v.At, d.cfg.Defrag.Limits.Keep())
	if err != nil {
		return nil, err
	}
	if bad > 0 {
		d.log.Warn().Int("lines", bad).Str("audit_log", audit.Path).Msg("defrag: audit log lines that do not read were skipped")
	}
	d.eps = eps
	_, spent := h.Spent(v.At, d.cfg.Defrag.Limits)
	if budget := d.cfg.Defrag.Limits.Budget(v.Snapshot.Cluster.NumGPUs()); budget > 0 {
		d.m.budget.Set(spent / budget)
	}
	return defragrun.NewPlanner(d.cfg, v.Snapshot.Cluster, h)
}

// pin pins pending gangs to the domain Slurm's preemption should free.
func (d *defragDuty) pin(ctx context.Context, v *defragrun.View, p *defragrun.Planner) {
	if v.At.Sub(d.ruleAt) >= ruleEvery {
		rule, err := d.setup.Preemption(ctx)
		if err != nil {
			d.log.Error().Err(err).Msg("defrag: reading Slurm's preemption rule failed; no pins this cycle")
			return
		}
		d.rule, d.ruleAt = rule, v.At
	}
	if !d.rule.Active() {
		return
	}
	for _, g := range d.candidates(v, p, 0, 0) {
		if g.Job.Job.ReqNodes != "" {
			continue // the user's own node list: not gangtopo's to replace
		}
		pr, ok := p.ProposePreemption(v, g, d.rule)
		if !ok || pr.FitsNow {
			continue // nothing to preempt: Slurm starts it where it fits
		}
		if d.pinOne(ctx, g, pr, v.At) {
			return
		}
	}
}

// pinOne pins gang g to the proposal's nodes until now + pin_timeout;
// stop says the door takes no more changes this round.
func (d *defragDuty) pinOne(ctx context.Context, g defragrun.Gang, pr *defragrun.Proposal, now time.Time) (stop bool) {
	target := g.Job.Target
	if target == "" {
		target = g.Job.ID
	}
	mark := actuate.Mark{By: "defrag", Nodes: pr.GangNode, Until: now.Add(d.cfg.Defrag.PinTimeout)}
	e := actuate.Entry{Gang: g.Job.ID, GPUs: g.Request.GPUs, Domain: pr.Domain, Cost: pr.Plan.Cost, LostGPUHours: pr.Lost,
		Duty: "defrag", Reason: "ReqNodeList: Slurm's preemption frees this domain at the least cost"}
	ch := actuate.PinChange(e, target, g.Job.Facts.AdminComment, mark)
	ch.Timeout = d.cfg.Defrag.Timeout
	_, err := d.door.Do(ctx, ch)
	result := "pinned"
	switch {
	case err != nil && actuate.Refused(err):
		result = "refused"
	case err != nil:
		result = "failed"
	}
	d.m.pins.WithLabelValues(result).Inc()
	d.log.Info().Str("gang", g.Job.ID).Str("nodes", pr.GangNode).Str("domain", pr.Domain).Time("until", mark.Until).
		Str("result", result).AnErr("error", err).Msg("defrag: pinned a preempting gang to the domain whose preemption costs least")
	if err == nil {
		d.eps = append(d.eps, defragrun.Episode{Gang: g.Job.ID, At: now, Pin: true})
	}
	return errors.Is(err, actuate.ErrBusy) || errors.Is(err, actuate.ErrLimit) || errors.Is(err, actuate.ErrAudit)
}

// forget drops refusals older than retry.
func (d *defragDuty) forget(now time.Time) {
	for id, t := range d.refused {
		if now.Sub(t) >= d.cfg.Defrag.Auto.Retry {
			delete(d.refused, id)
		}
	}
}

// defragMetrics are the duties' Prometheus series.
type defragMetrics struct {
	plans, refused, pins      *prometheus.CounterVec
	requeues, lost            prometheus.Counter
	holds, budget, candidates prometheus.Gauge
}

func newDefragMetrics(reg prometheus.Registerer) *defragMetrics {
	m := &defragMetrics{
		plans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_defrag_plans_total",
			Help: "Defragmentation plans the controller's policy acted on, by result: carried (room held, jobs requeued), stale (the re-check found the cluster changed; nothing requeued), failed (a change did not go through; the hold was ended), refused (the door did not let it start: busy, a limit, the audit log)."}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_defrag_refused_total",
			Help: "Waiting gangs the policy planned for and did not act on, by reason: no_plan, cost (over defrag.auto.max_cost), rate, budget."}, []string{"reason"}),
		pins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_defrag_pins_total",
			Help: "Preempting gangs pinned (ReqNodeList, until defrag.pin_timeout) to the domain Slurm's preemption frees at the least cost, by result: pinned, failed, refused (by the door)."}, []string{"result"}),
		requeues: prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_defrag_requeues_total", Help: "Jobs the controller's policy requeued."}),
		lost:     prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_defrag_lost_gpu_hours_total", Help: "GPU-hours of work the requeued jobs lost (the cost model's, restart overhead included)."}),
		holds:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_holds", Help: "Reservations gangtopo keeps for gangs waiting to start."}),
		budget:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_budget_used_ratio", Help: "GPU-hours lost within defrag.budget_window over the lost-work budget."}),
		candidates: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_candidates",
			Help: "Pending gangs the policy could plan for in the last cycle (big enough, waited long enough for a reason a requeue can fix, not refused or backed off lately)."}),
	}
	reg.MustRegister(m.plans, m.refused, m.pins, m.requeues, m.lost, m.holds, m.budget, m.candidates)
	for _, r := range []string{"carried", "stale", "failed", "refused"} {
		m.plans.WithLabelValues(r)
	}
	for _, r := range []string{"no_plan", "cost", "rate", "budget"} {
		m.refused.WithLabelValues(r)
	}
	for _, r := range []string{"pinned", "failed", "refused"} {
		m.pins.WithLabelValues(r)
	}
	return m
}
