package controller

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The controller's defragmentation duties (gangtopo.yaml's defrag:
// section, docs/defrag.md), after each published snapshot:
//
//  1. Tend the holds: a reservation gangtopo made for a gang is ended once
//     the gang runs (the gang is taken out of it first: a reservation that
//     ends with a job inside ends the job), when the gang is gone, or when
//     the hold is about to run out with the gang still waiting
//     (defragrun.Executor.Tend). `defrag apply --wait 0` leaves its hold to
//     this.
//  2. The policy (defrag.auto, off by default): each pending gang of at
//     least min_gpus GPUs that has waited min_wait, oldest first (at most
//     max_tries a cycle, a gang no plan passed for not again within retry),
//     gets a plan (defragrun.Planner, the planner `defrag apply` uses); one
//     costing at most max_cost that the limits allow is carried out
//     (defragrun.Executor.Carry: hold, re-check on a fresh poll, requeue),
//     at most max_per_cycle a cycle. The controller does not wait for the
//     gang: step 1 of a later cycle ends the hold.
//  3. Topology-aware preemption (defrag.pin_preemption): where Slurm
//     preempts (PreemptType partition_prio or qos, PreemptMode REQUEUE or
//     CANCEL), a pending gang that does not fit now is pinned
//     (ReqNodeList) to the nodes of the cheapest compact domain whose jobs
//     Slurm may preempt for it; Slurm then preempts there and nowhere else.
//     A gang is pinned once per requeue_window.
//
// Nothing happens while the section names nothing that may be requeued
// and pins nothing: no Slurm command is run for it.

// DefragSetup turns the duties on: gangtopo.yaml (re-read when it changes)
// and how to reach Slurm.
type DefragSetup struct {
	ConfigPath string
	Config     ctld.Config
	Slurm      defragrun.Slurm
	// Preemption reads Slurm's preemption rule (defragrun.Scontrol).
	Preemption func(ctx context.Context) (defrag.Preemption, error)
}

// observeFunc polls Slurm afresh (the re-check before a requeue).
type observeFunc func(ctx context.Context) (*defragrun.View, error)

type defragDuty struct {
	setup DefragSetup
	log   zerolog.Logger
	m     *defragMetrics
	now   func() time.Time

	cfg     ctld.Config
	stamp   time.Time
	refused map[string]time.Time // gang -> when no plan passed for it
	pinned  map[string]pin       // gang -> its pin
	rule    defrag.Preemption
	ruleAt  time.Time
}

// pin is a preempting gang's pin: when, and the node list it was given.
type pin struct {
	at    time.Time
	nodes string
}

// ruleEvery is how often Slurm's preemption rule is read again.
const ruleEvery = 5 * time.Minute

// holdMargin: a hold whose end is this close with its gang still waiting
// is ended by the controller rather than by Slurm (which would leave the
// gang bound to a reservation that is gone).
const holdMargin = 30 * time.Second

func newDefragDuty(setup DefragSetup, log zerolog.Logger, reg prometheus.Registerer, now func() time.Time) *defragDuty {
	d := &defragDuty{setup: setup, log: log, m: newDefragMetrics(reg), now: now, cfg: setup.Config,
		refused: map[string]time.Time{}, pinned: map[string]pin{}}
	if fi, err := os.Stat(setup.ConfigPath); err == nil {
		d.stamp = fi.ModTime()
	}
	return d
}

// active says whether any duty is on.
func (d *defragDuty) active() bool {
	dc := d.cfg.Defrag
	return !dc.Scope.Empty() || dc.PinPreemption
}

func (d *defragDuty) executor() *defragrun.Executor {
	return &defragrun.Executor{Slurm: d.setup.Slurm, Audit: defragrun.Audit{Path: d.cfg.Defrag.AuditLog}, Cfg: d.cfg.Defrag,
		By: "controller", Now: d.now, Logf: func(format string, args ...any) {
			d.log.Info().Str("duty", "defrag").Msgf(format, args...)
		}}
}

// cycle runs the duties on the view of this cycle.
func (d *defragDuty) cycle(ctx context.Context, v *defragrun.View, observe observeFunc) {
	d.reloadConfig()
	if !d.active() {
		return
	}
	x := d.executor()
	if !d.cfg.Defrag.Scope.Empty() {
		kept, err := x.Tend(ctx, holdMargin)
		if err != nil {
			d.log.Error().Err(err).Msg("defrag: listing gangtopo's holds failed; they are tended next cycle")
		}
		d.m.holds.Set(float64(kept))
	}
	if d.cfg.Defrag.Auto.Enabled && !d.cfg.Defrag.Scope.Empty() {
		d.auto(ctx, v, x, observe)
	}
	if d.cfg.Defrag.PinPreemption {
		d.pin(ctx, v, x)
	}
	d.forget(v.At)
}

// candidates are the pending gangs the policy may plan for now, in the
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
		if notYet[pj.Reason] || strings.HasPrefix(pj.Facts.Reservation, defragrun.HoldPrefix) || v.At.Sub(pj.Submit) < minWait {
			continue
		}
		if t, ok := d.refused[pj.ID]; ok && v.At.Sub(t) < retry {
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

// auto is the policy: plan for the due gangs, carry out what passes.
func (d *defragDuty) auto(ctx context.Context, v *defragrun.View, x *defragrun.Executor, observe observeFunc) {
	a := d.cfg.Defrag.Auto
	p, err := d.planner(v)
	if err != nil {
		d.log.Error().Err(err).Msg("defrag: reading the audit log failed; no plan this cycle")
		return
	}
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
		if d.carry(ctx, p, pr, x, observe) {
			carried++
			v, err = observe(ctx) // the cluster changed: plan the next gang on it
			if err != nil {
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

// carry carries one proposal out, re-checking on a fresh poll.
func (d *defragDuty) carry(ctx context.Context, p *defragrun.Planner, pr *defragrun.Proposal, x *defragrun.Executor, observe observeFunc) bool {
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
	if err != nil {
		result := "failed"
		var se *defragrun.StaleError
		if errors.As(err, &se) {
			result = "stale"
		}
		d.m.plans.WithLabelValues(result).Inc()
		d.refused[pr.Gang.Job.ID] = d.now()
		d.log.Warn().Err(err).Str("gang", pr.Gang.Job.ID).Msg("defrag: a plan was not carried out")
		return false
	}
	d.m.plans.WithLabelValues("carried").Inc()
	d.m.requeues.Add(float64(len(out.Requeued)))
	d.m.lost.Add(pr.Lost)
	return true
}

// planner is the planner of this cycle, with the audit log's history.
func (d *defragDuty) planner(v *defragrun.View) (*defragrun.Planner, error) {
	h, bad, err := defragrun.Audit{Path: d.cfg.Defrag.AuditLog}.History(v.At, d.cfg.Defrag.Limits.Keep())
	if err != nil {
		return nil, err
	}
	if bad > 0 {
		d.log.Warn().Int("lines", bad).Str("audit_log", d.cfg.Defrag.AuditLog).Msg("defrag: audit log lines that do not read were skipped")
	}
	_, spent := h.Spent(v.At, d.cfg.Defrag.Limits)
	if budget := d.cfg.Defrag.Limits.Budget(v.Snapshot.Cluster.NumGPUs()); budget > 0 {
		d.m.budget.Set(spent / budget)
	}
	return defragrun.NewPlanner(d.cfg, v.Snapshot.Cluster, h)
}

// pin pins pending gangs to the domain Slurm's preemption should free.
func (d *defragDuty) pin(ctx context.Context, v *defragrun.View, x *defragrun.Executor) {
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
	p, err := defragrun.NewPlanner(d.cfg, v.Snapshot.Cluster, nil)
	if err != nil {
		return
	}
	for _, g := range d.candidates(v, p, 0, 0) {
		if g.Job.Job.ReqNodes != "" || !d.pinned[g.Job.ID].at.IsZero() {
			continue
		}
		pr, ok := p.ProposePreemption(v, g, d.rule)
		if !ok || pr.FitsNow {
			continue
		}
		d.pinned[g.Job.ID] = pin{at: v.At, nodes: pr.GangNode}
		err := d.setup.Slurm.Pin(ctx, g.Job.ID, pr.GangNode)
		e := defragrun.Entry{Time: v.At.UTC(), Action: "pin", Job: g.Job.ID, Gang: g.Job.ID, GPUs: g.Request.GPUs, Nodes: pr.GangNode,
			Domain: pr.Domain, Cost: pr.Plan.Cost, LostGPUHours: pr.Lost, By: "controller", Result: "ok",
			Reason: "ReqNodeList: Slurm's preemption frees this domain at the least cost"}
		if err != nil {
			e.Result = err.Error()
			d.m.pins.WithLabelValues("failed").Inc()
		} else {
			d.m.pins.WithLabelValues("pinned").Inc()
		}
		if aerr := x.Audit.Append(e); aerr != nil {
			d.log.Error().Err(aerr).Msg("defrag: audit log")
		}
		d.log.Info().Str("gang", g.Job.ID).Str("nodes", pr.GangNode).Str("domain", pr.Domain).Str("result", e.Result).
			Msg("defrag: pinned a preempting gang to the domain whose preemption costs least")
	}
}

// forget drops refusals older than retry and pins older than the window.
func (d *defragDuty) forget(now time.Time) {
	for id, t := range d.refused {
		if now.Sub(t) >= d.cfg.Defrag.Auto.Retry {
			delete(d.refused, id)
		}
	}
	for id, p := range d.pinned {
		if now.Sub(p.at) >= d.cfg.Defrag.Limits.Window {
			delete(d.pinned, id)
		}
	}
}

// reloadConfig re-reads gangtopo.yaml when it changed; one that does not
// load is logged and the previous one kept.
func (d *defragDuty) reloadConfig() {
	fi, err := os.Stat(d.setup.ConfigPath)
	if err != nil || fi.ModTime().Equal(d.stamp) {
		return
	}
	d.stamp = fi.ModTime()
	cfg, err := ctld.LoadConfig(d.setup.ConfigPath)
	if err != nil {
		d.log.Error().Err(err).Msg("gangtopo.yaml changed but does not load; defragmentation keeps the previous configuration")
		return
	}
	d.cfg = cfg
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
			Help: "Defragmentation plans the controller's policy acted on, by result: carried (room held, jobs requeued), stale (the re-check found the cluster changed; nothing requeued), failed."}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_defrag_refused_total",
			Help: "Waiting gangs the policy planned for and did not act on, by reason: no_plan, cost (over defrag.auto.max_cost), rate, budget."}, []string{"reason"}),
		pins: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_defrag_pins_total",
			Help: "Preempting gangs pinned (ReqNodeList) to the domain Slurm's preemption frees at the least cost, by result."}, []string{"result"}),
		requeues: prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_defrag_requeues_total", Help: "Jobs the controller's policy requeued."}),
		lost:     prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_defrag_lost_gpu_hours_total", Help: "GPU-hours of work the requeued jobs lost (the cost model's, restart overhead included)."}),
		holds:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_holds", Help: "Reservations gangtopo keeps for gangs waiting to start."}),
		budget:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_budget_used_ratio", Help: "GPU-hours lost within defrag.budget_window over the lost-work budget."}),
		candidates: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_defrag_candidates",
			Help: "Pending gangs the policy could plan for in the last cycle (big enough, waited long enough, not refused lately)."}),
	}
	reg.MustRegister(m.plans, m.refused, m.pins, m.requeues, m.lost, m.holds, m.budget, m.candidates)
	for _, r := range []string{"carried", "stale", "failed"} {
		m.plans.WithLabelValues(r)
	}
	for _, r := range []string{"no_plan", "cost", "rate", "budget"} {
		m.refused.WithLabelValues(r)
	}
	return m
}
