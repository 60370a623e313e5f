package controller

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Re-binding pending jobs whose binding went stale (steering at schedule
// time).
//
// After each published snapshot the controller looks at every pending job
// that carries a gangtopo decision with a binding (squeue --json,
// slurmstate.PendingJob) and asks the plugin's own decision code
// (jobsubmit.Decider.Rebind) whether the binding is what keeps it waiting:
// it cannot start inside its bound domains or nodes now, but a new
// decision on the same snapshot, about the job as its user submitted it,
// would start it. Such a job gets the new decision's fields through
// `scontrol update` (features, exclusions, shape, and the new decision
// line in its AdminComment).
//
// Order and limits: the jobs are taken in Slurm's priority order (then
// submit time), the order Slurm starts them in, and each job that starts
// now, inside its binding or re-bound, is allocated on the cycle's working
// copy of the snapshot: two jobs are not sent to the same free GPUs, and
// no job is re-bound to room a job before it in Slurm's order will take
// (an update each such job would waste: with a backlog of tens of
// thousands each costs slurmctld a wait for its job write lock,
// docs/benchmarks.md). At most max_per_cycle updates a cycle; a
// job is not updated again within job_interval (Slurm may need a
// scheduling pass or two to start it); every update is killed after
// timeout, and one that runs out ends the cycle's updates (slurmctld is
// busy or down, and the next would wait as long). The snapshot is already
// published when this runs, so the plugin never waits for it.
//
// Only jobs with a decision in their AdminComment are looked at: users
// cannot write it, so no user can make the controller change a job. A job
// gangtopo pinned (actuate.Mark) is left alone: its pin, not its binding,
// says where it goes until the pin is undone. Every update goes through
// the door (actuate.Door: leader, audit line first, limits, back-off).

// RebindSetup turns re-binding on: gangtopo.yaml (the plugin's policy and
// its rebind: section, re-read when the file changes).
type RebindSetup struct {
	ConfigPath string
	Config     ctld.Config // as loaded at start
}

// rebinder is the controller's re-binding state across cycles.
type rebinder struct {
	door *actuate.Door
	log  zerolog.Logger
	m    *rebindMetrics

	cfg     ctld.Config
	cluster *topology.Cluster
	mix     string // the request mix the engine measures against, as JSON
	policy  string // the policy the decider was made with, as JSON
	dec     *jobsubmit.Decider
	eng     *place.Engine
	last    map[string]time.Time // job ID -> when it was last updated
	// failures remembers where running gangs ran, for those requeued
	// after a node failure (failure.go).
	failures *failureWatch
	// requeueDelay is Slurm's requeue delay, as slurm.conf sets it
	// (atonce.go: RequeueDelay, read with the duties' show config)
	requeueDelay time.Duration
}

func newRebinder(setup RebindSetup, door *actuate.Door, log zerolog.Logger, reg prometheus.Registerer) *rebinder {
	return &rebinder{door: door, log: log, m: newRebindMetrics(reg), cfg: setup.Config, last: map[string]time.Time{}, failures: newFailureWatch(reg),
		requeueDelay: DefaultRequeueDelay}
}

// cycle re-binds the stale jobs among pending on snapshot s (of cluster
// c), under gangtopo.yaml cfg.
func (r *rebinder) cycle(ctx context.Context, cfg ctld.Config, c *topology.Cluster, s *occupancy.Snapshot, pending, requeuing []slurmstate.PendingJob) {
	r.cfg = cfg
	if !r.cfg.Rebind.Enabled {
		r.m.stale.Set(0)
		return
	}
	if err := r.decider(c, s.Mix); err != nil {
		r.log.Error().Err(err).Msg("re-binding off this cycle: the plugin's policy does not apply to the topology")
		return
	}
	jobs := bound(pending)
	work := s.Clone()
	now := r.door.Now()
	restarted, updated, stop := r.restarts(ctx, s, work, pending, requeuing)
	if !stop {
		updated, stop = r.restartAtOnce(ctx, pending, updated)
	}
	stale := 0
	for _, pj := range jobs {
		if stop {
			break
		}
		if mayNotStart(pj) || restarted[pj.ID] {
			continue // it could not start now anyway: its binding is not what keeps it
		}
		d, _ := jobsubmit.ParseDecision(pj.Decision) // bound() parsed it
		rb := r.dec.Rebind(pj.Job, d, work, r.eng, s.Generation)
		if !rb.Stale {
			hold(work, rb.Tasks) // it starts inside its binding: Slurm gives it the room first
			continue
		}
		stale++
		if t, ok := r.last[pj.ID]; ok && now.Sub(t) < r.cfg.Rebind.JobInterval {
			r.m.skipped.WithLabelValues("job_interval").Inc()
			continue
		}
		if updated >= r.cfg.Rebind.MaxPerCycle {
			r.m.skipped.WithLabelValues("max_per_cycle").Inc()
			continue
		}
		updated++
		if err := r.apply(ctx, pj, rb, work, now); endsUpdates(err) {
			break
		}
	}
	r.m.stale.Set(float64(stale))
	r.m.bound.Set(float64(len(jobs)))
	r.forget(now)
}

// apply runs one update, logs it and, when it took, holds the job's new
// placement on the cycle's working snapshot.
func (r *rebinder) apply(ctx context.Context, pj slurmstate.PendingJob, rb jobsubmit.Rebinding, work *occupancy.Snapshot, now time.Time) error {
	r.last[pj.ID] = now
	target := updateTarget(pj)
	ch := actuate.Change{Entry: actuate.Entry{Action: "rebind", Job: target, Duty: "rebind", Reason: rb.Why},
		Cmd: "scontrol", Args: append([]string{"update", "JobId=" + target}, rb.Update.Args()...), Timeout: r.cfg.Rebind.Timeout}
	_, err := r.door.Do(ctx, ch)
	switch {
	case err != nil && actuate.Refused(err):
		r.m.rebinds.WithLabelValues("refused").Inc()
		delete(r.last, pj.ID) // not made: may be tried again
		return err
	case err != nil && gone(err):
		r.m.rebinds.WithLabelValues("gone").Inc()
		r.log.Info().Str("job", pj.ID).Str("error", err.Error()).Msg("a stale job started or ended before its re-binding")
		return err
	case err != nil:
		r.m.rebinds.WithLabelValues("failed").Inc()
		r.log.Error().Err(err).Str("job", pj.ID).Str("update", rb.Update.String()).Msg("re-binding a stale job failed")
		return err
	}
	r.m.rebinds.WithLabelValues("updated").Inc()
	hold(work, rb.Tasks)
	r.log.Info().Str("job", pj.ID).Str("reason", pj.Reason).Str("why", rb.Why).Str("update", rb.Update.String()).
		Str("decision", rb.Result.Decision.String()).Msg("re-bound a stale pending job")
	return nil
}

// updateTarget is what an update of pending job pj names (Target, else
// its ID).
func updateTarget(pj slurmstate.PendingJob) string {
	if pj.Target == "" {
		return pj.ID
	}
	return pj.Target
}

// endsUpdates says an update's error ends the cycle's updates: the door's
// limit or busy state, or a command that ran out of time (slurmctld is
// slow, and the next would wait as long).
func endsUpdates(err error) bool {
	return errors.Is(err, actuate.ErrBusy) || errors.Is(err, actuate.ErrLimit) || errors.Is(err, slurmstate.ErrUpdateTimeout)
}

// hold allocates where a job starts now on the cycle's working snapshot,
// for the jobs after it. The engine placed each on work: it fits.
func hold(work *occupancy.Snapshot, tasks []occupancy.Allocation) {
	for _, a := range tasks {
		_ = work.Allocate(a)
	}
}

// notYet are Slurm's reasons for a job that may not start yet whatever
// the nodes: held, waiting for another job or a start time, or for its
// array's earlier tasks (the % limit). Re-binding such a job now would
// bind it to the state of now, not of when it may start.
var notYet = map[string]bool{"JobHeldUser": true, "JobHeldAdmin": true, "Dependency": true,
	"DependencyNeverSatisfied": true, "BeginTime": true, "JobArrayTaskLimit": true}

// mayNotStart says a pending job may not start now whatever the nodes:
// Slurm's reason says so (notYet, or a limit), or its facts do, whatever
// the reason says at the moment of the poll (a job just submitted, or
// whose dependency was just tested, may show another one for a
// scheduling pass): it is held (priority 0), or it still waits on a
// dependency.
func mayNotStart(pj slurmstate.PendingJob) bool {
	return notYet[pj.Reason] || limited(pj.Reason) || pj.Priority == 0 || pj.Dependency != ""
}

// limitReasons are Slurm's reasons for a job that waits for a limit of
// its QOS, association, account, user or partition, or for something
// other than nodes (src/common/job_state_reason.c: QOS*, Assoc*,
// Max*PerAccount and Max*PerUser, ...). A limit counts the job's GPUs,
// nodes, CPUs or time wherever it runs, so a new binding does not start
// it: it starts when the limit is raised (the quota duty's move to the
// borrow QOS, for one) or the account's other jobs end. MaxPoweredUpNodes
// is not one: nodes already up may start the job.
var limitPrefixes = []string{"QOS", "Assoc", "Max", "Invalid", "BurstBuffer"}

var limitReasons = map[string]bool{"AccountingPolicy": true, "AccountNotAllowed": true, "Licenses": true,
	"JobHoldMaxRequeue": true, "PartitionDown": true, "PartitionInactive": true, "PartitionTimeLimit": true,
	"DeadLine": true, "Reservation": true, "ReservationDeleted": true, "ReservationInvalid": true}

// limited says Slurm's reason is one of limitReasons.
func limited(reason string) bool {
	if limitReasons[reason] {
		return true
	}
	if reason == "MaxPoweredUpNodes" {
		return false
	}
	for _, p := range limitPrefixes {
		if strings.HasPrefix(reason, p) {
			return true
		}
	}
	return false
}

// gone says an update failed because the job is no longer pending: it
// started (Slurm found room after all) or ended between the poll and the
// update, which is no failure of the controller's.
func gone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "no longer pending") || strings.Contains(msg, "Invalid job id") || strings.Contains(msg, "already completed")
}

// bound lists the pending jobs whose decision binds them, in the order
// Slurm starts them: priority, then submit time, then ID.
func bound(pending []slurmstate.PendingJob) []slurmstate.PendingJob {
	var out []slurmstate.PendingJob
	for _, pj := range pending {
		if _, pinned := actuate.ParseMark(pj.Facts.AdminComment); pinned {
			continue
		}
		if d, err := jobsubmit.ParseDecision(pj.Decision); err == nil && d.Binds() {
			out = append(out, pj)
		}
	}
	sort.SliceStable(out, func(i, k int) bool {
		a, b := out[i], out[k]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if !a.Submit.Equal(b.Submit) {
			return a.Submit.Before(b.Submit)
		}
		return a.ID < b.ID
	})
	return out
}

// decider makes the decision code for cluster c and the request mix the
// snapshot publishes, as the plugin does (spank/ctld, mix.go): again when
// the topology, the policy or the mix changed.
func (r *rebinder) decider(c *topology.Cluster, mix *occupancy.Mix) error {
	fp := ""
	if mix != nil {
		b, _ := json.Marshal(mix)
		fp = string(b)
	}
	pol, _ := json.Marshal(r.cfg.Policy)
	if r.dec != nil && r.cluster == c && r.mix == fp && r.policy == string(pol) {
		return nil
	}
	dec, err := jobsubmit.New(r.cfg.Policy, c)
	if err != nil {
		return err
	}
	var w *frag.Workload
	if mix != nil {
		if mw, err := frag.MixWorkload(c, mix); err == nil {
			w = &mw
		} // else the default mix, as the plugin falls back to
	}
	r.cluster, r.mix, r.policy, r.dec, r.eng = c, fp, string(pol), dec, place.New(c, r.cfg.EngineOptions(w))
	return nil
}

// forget drops the jobs updated longer than job_interval ago.
func (r *rebinder) forget(now time.Time) {
	for id, t := range r.last {
		if now.Sub(t) >= r.cfg.Rebind.JobInterval {
			delete(r.last, id)
		}
	}
}

// rebindMetrics are the re-binding's Prometheus series.
type rebindMetrics struct {
	rebinds *prometheus.CounterVec
	skipped *prometheus.CounterVec
	stale   prometheus.Gauge
	bound   prometheus.Gauge
}

func newRebindMetrics(reg prometheus.Registerer) *rebindMetrics {
	m := &rebindMetrics{
		rebinds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_rebinds_total",
			Help: "Stale pending jobs re-bound through scontrol update, by result: updated, gone (started or ended before the update), failed, or refused (the door did not make it: not the leader, a limit, a back-off, the audit log)."}, []string{"result"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_rebind_skipped_total",
			Help: "Stale pending jobs left for a later cycle, by limit: job_interval (re-bound recently) or max_per_cycle."}, []string{"limit"}),
		stale: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_stale_pending_jobs",
			Help: "Pending jobs found waiting only because of their gangtopo binding in the last cycle (a new decision would start them)."}),
		bound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_bound_pending_jobs",
			Help: "Pending jobs carrying a gangtopo binding in the last cycle."}),
	}
	reg.MustRegister(m.rebinds, m.skipped, m.stale, m.bound)
	for _, r := range []string{"updated", "gone", "failed", "refused"} {
		m.rebinds.WithLabelValues(r)
	}
	for _, l := range []string{"job_interval", "max_per_cycle"} {
		m.skipped.WithLabelValues(l)
	}
	return m
}

// observe remembers where the running gangs run (failure.go), whether or
// not this controller acts, so that one that takes over knows too; and
// logs each newly seen on a failed node.
func (r *rebinder) observe(st *slurmstate.State, s *occupancy.Snapshot, at time.Time) {
	for _, id := range r.failures.observe(st, s, at) {
		r.log.Warn().Str("job", id).Msg("a node under a running gang is down, drained or failing: Slurm requeues the gang if the node is down and the job may be requeued; its restart is re-bound (rebind.after_failure)")
	}
}
