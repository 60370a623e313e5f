package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// The duties (re-binding, defragmentation, quotas, the pins' expiry) act
// on Slurm; the poll only reads it and publishes. They run apart, so that
// the snapshot keeps its period whatever the duties wait for (twenty
// updates that each run into a 10 s timeout must not age the snapshot
// past max_snapshot_age, or the plugin passes every job untouched):
//
//	poll loop (daemon.Run, every interval)   duty loop (its own goroutine)
//	  poll, build, publish the snapshot  ->    the latest published state
//	  hand it over, never waiting              (an older one not taken yet
//	                                            is dropped), one round at
//	                                            a time
//
// One duty round:
//
//  1. gangtopo.yaml is read again if it changed (configWatch).
//  2. The door (actuate.Door) is told the actions: rules and whether
//     actions are switched off: actions.enabled false, or gangtopo not in
//     slurm.conf's JobSubmitPlugins (the documented fast off switch, read
//     from `scontrol show config` at most once a minute). Switched off,
//     the controller still puts back the pins and holds it made.
//  3. The door asks whether this controller leads (actions.leader): a
//     controller that does not lead runs no duty (it publishes only), and
//     says so once when that changes.
//  4. The pins whose mark expired, or whose duty is off, are undone
//     (pins.go), and the defragmentation's holds that are done are ended
//     (defrag.go; all of them while switched off); then each duty that is
//     on runs, all through the door.
//
// Without the duty goroutine (daemon --once, tests) a cycle runs its
// round itself, after publishing.

// ActionsSetup is how the door reaches Slurm: every change through Run,
// the controller in control from Ping (scontrol ping), slurm.conf's
// JobSubmitPlugins from ShowConfig (scontrol show config). Host is this
// host as SlurmctldHost names it (default: actions.host, else the host
// name); LockPath the lock that keeps a second controller on this host
// from acting (default: controller.lock beside the audit log).
type ActionsSetup struct {
	Run        actuate.Runner
	Ping       func(ctx context.Context) (string, error)
	ShowConfig func(ctx context.Context) (string, error)
	Host       string
	LockPath   string
}

// requeuing are the IDs of the jobs the state's poll saw Slurm
// requeueing.
func (s dutyState) requeuing() map[string]bool {
	if s.st == nil || len(s.st.Requeuing) == 0 {
		return nil
	}
	m := make(map[string]bool, len(s.st.Requeuing))
	for _, pj := range s.st.Requeuing {
		m[pj.ID] = true
	}
	return m
}

// dutyState is what a round works on: a published snapshot, the poll it
// was built from, and the topology and fragmentation meter of that cycle
// (the poll loop may replace its own meanwhile: the duty loop never reads
// the poll loop's fields).
type dutyState struct {
	s       *occupancy.Snapshot
	st      *slurmstate.State
	at      time.Time
	cluster *topology.Cluster
	meter   *frag.Meter
}

// duties is the duty loop's state.
type duties struct {
	conf    *configWatch
	setup   ActionsSetup
	door    *actuate.Door
	lock    *actuate.ProcessLock
	leading bool
	why     string
	// pluginOn caches whether slurm.conf lists the job_submit plugin, read
	// at pluginAt, with Slurm's requeue delay (RequeueDelay; 0 until read).
	pluginOn     bool
	pluginAt     time.Time
	requeueDelay time.Duration
	next         chan dutyState // capacity 1: the latest state not taken yet
	done         chan struct{}  // closed when the duty loop has returned
	// lastEnd is when the last round that acted ended: a state polled
	// before it may not show that round's changes yet, and acting on it
	// could make a change twice.
	lastEnd time.Time
	// rounds tells the wakes (wake.go) when a round ends
	rounds rounds
	m      *dutyMetrics
}

// pluginEvery is how often slurm.conf's JobSubmitPlugins is read again.
const pluginEvery = time.Minute

func newDuties(path string, cfg ctld.Config, setup ActionsSetup, c *Controller, reg prometheus.Registerer) *duties {
	d := &duties{conf: newConfigWatch(path, cfg, c.log), setup: setup, pluginOn: true, next: make(chan dutyState, 1), done: make(chan struct{}), m: newDutyMetrics(reg)}
	lockPath := setup.LockPath
	if lockPath == "" {
		lockPath = filepath.Join(filepath.Dir(cfg.Actions.AuditLog), "controller.lock")
	}
	d.lock = &actuate.ProcessLock{Path: lockPath}
	d.lock.Next = d.leaderFor(cfg.Actions)
	d.door = actuate.NewDoor(setup.Run, actuate.Audit{Path: cfg.Actions.AuditLog}, d.lock, "controller", doorConfig(cfg.Actions, false))
	d.door.Now = c.now
	d.door.Log = func(e actuate.Entry) {
		ev := c.log.Info()
		if e.Result != actuate.ResultOK && e.Result != "dry-run" {
			ev = c.log.Warn()
		}
		ev.Str("action", e.Action).Str("job", e.Job).Str("duty", e.Duty).Str("result", e.Result).Str("command", e.Command).
			Str("reason", e.Reason).Msg("change to Slurm")
	}
	return d
}

// leaderFor is actions.leader's rule (behind the process lock).
func (d *duties) leaderFor(a ctld.ActionsConfig) actuate.Leader {
	switch a.Leader {
	case ctld.LeaderAlways:
		return actuate.Always{}
	case ctld.LeaderNever:
		return actuate.Never{}
	}
	host := d.setup.Host
	if host == "" {
		host = a.Host
	}
	if host != "" {
		// named: that name alone is this host (a backup whose addresses
		// the primary's name might also resolve to, in a test bed)
		return actuate.SlurmPrimary{Host: host, Ping: d.setup.Ping, Local: func(context.Context, string) bool { return false }}
	}
	host, _ = os.Hostname()
	return actuate.SlurmPrimary{Host: host, Ping: d.setup.Ping}
}

func doorConfig(a ctld.ActionsConfig, pluginOff bool) actuate.Config {
	return actuate.Config{Off: !a.Enabled || pluginOff, DryRun: a.DryRun, MaxPerCycle: a.MaxPerCycle, Backoff: a.Backoff, MaxBackoff: a.MaxBackoff}
}

// offer hands the latest published state to the duty loop without
// waiting: a state the loop has not taken yet is replaced.
func (d *duties) offer(s dutyState) {
	select {
	case <-d.next:
		d.m.dropped.Inc()
	default:
	}
	d.next <- s
}

// RunDuties is the duty loop: one round per state offered, until ctx
// ends.
func (c *Controller) RunDuties(ctx context.Context) {
	if c.duties == nil {
		return
	}
	defer close(c.duties.done)
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-c.duties.next:
			c.round(ctx, s)
		}
	}
}

// round is one duty round (see the top of this file). A state polled
// before the previous round ended is skipped: it may not show that
// round's changes (an undone pin still pinned, a moved job in its old
// QOS), and acting on it could make a change twice.
func (c *Controller) round(ctx context.Context, s dutyState) {
	d := c.duties
	if s.at.Before(d.lastEnd) {
		d.m.dropped.Inc()
		return
	}
	start := c.now()
	t := roundTimes{start: start, now: c.now}
	defer func() {
		d.rounds.finished(s.at, s.requeuing())
		d.lastEnd = c.now()
		d.m.round.Observe(d.lastEnd.Sub(start).Seconds())
		t.log(c, d.door.Made(), d.lastEnd)
		// a bug in one duty must not take the snapshot with it: the
		// plugin passes every job untouched once the snapshot is stale
		if r := recover(); r != nil {
			d.m.panics.Inc()
			c.log.Error().Str("panic", fmt.Sprint(r)).Str("stack", string(debug.Stack())).
				Msg("a duty round panicked (a bug: please report it); the snapshot is still published and the next round starts afresh")
		}
	}()
	gen := d.conf.gen
	d.conf.reload()
	cfg := d.conf.cfg
	if d.conf.gen != gen {
		d.lock.Next = d.leaderFor(cfg.Actions)
	}
	if c.rebind != nil {
		c.rebind.observe(s.st, s.s, s.at)
	}
	pluginOff := !d.pluginListed(ctx, cfg, start)
	d.door.SetConfig(doorConfig(cfg.Actions, pluginOff))
	lead, why := d.door.Begin(ctx)
	c.logLeadership(lead, why, d.door.Off(), pluginOff)
	if !lead {
		return
	}
	t.lap("lead")
	c.expirePins(ctx, s.st, cfg, start, "")
	if c.defrag != nil {
		c.defrag.tend(ctx, cfg, d.door.Off(), start, s.st.Pending)
	}
	t.lap("pins")
	if d.door.Off() {
		return
	}
	if c.rebind != nil {
		if d.requeueDelay > 0 {
			c.rebind.requeueDelay = d.requeueDelay
		}
		c.rebind.cycle(ctx, cfg, s.cluster, s.s, s.st.Pending, s.st.Requeuing)
		t.lap("rebind")
	}
	if c.defrag != nil {
		c.defrag.cycle(ctx, cfg, s.view(), c.observer(s.cluster))
		t.lap("defrag")
	}
	if c.quota != nil {
		c.quota.cycle(ctx, cfg, s.s, s.st, s.meter)
		t.lap("quota")
	}
}

// roundTimes times a round's steps, for the debug line that ends it and
// the per-duty histogram: at the size of a site, which duty takes the
// round's time decides what to switch off (docs/admin.md, "A site of
// 1,000 nodes").
type roundTimes struct {
	start, last time.Time
	now         func() time.Time
	steps       []string
	took        []time.Duration
}

// lap ends the step named step.
func (t *roundTimes) lap(step string) {
	now := t.now()
	if t.last.IsZero() {
		t.last = t.start
	}
	t.steps, t.took, t.last = append(t.steps, step), append(t.took, now.Sub(t.last)), now
}

// log writes the round's debug line and observes each duty's time.
func (t *roundTimes) log(c *Controller, changes int, end time.Time) {
	ev := c.log.Debug().Dur("took", end.Sub(t.start)).Int("changes", changes)
	for i, step := range t.steps {
		ev = ev.Dur("took_"+step, t.took[i])
		c.duties.m.duty.WithLabelValues(step).Observe(t.took[i].Seconds())
	}
	ev.Msg("duty round")
}

// pluginListed says whether slurm.conf's JobSubmitPlugins names gangtopo
// (read at most once a minute); while it does not, the controller puts
// back what it made and makes nothing new. A read that fails keeps the
// last answer. The same read gives Slurm's requeue delay (RequeueDelay).
func (d *duties) pluginListed(ctx context.Context, cfg ctld.Config, now time.Time) bool {
	if d.setup.ShowConfig == nil || now.Sub(d.pluginAt) < pluginEvery && !d.pluginAt.IsZero() {
		return d.pluginOn
	}
	out, err := d.setup.ShowConfig(ctx)
	if err != nil {
		return d.pluginOn
	}
	d.pluginAt = now
	d.pluginOn = slices.Contains(JobSubmitPlugins(out), "gangtopo")
	d.requeueDelay = RequeueDelay(out)
	return d.pluginOn
}

// JobSubmitPlugins reads slurm.conf's JobSubmitPlugins from `scontrol show
// config` ("JobSubmitPlugins        = lua,gangtopo"); the names without
// their "job_submit/" prefix.
func JobSubmitPlugins(showConfig string) []string {
	for _, line := range strings.Split(showConfig, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "JobSubmitPlugins" {
			continue
		}
		var out []string
		for _, p := range strings.Split(strings.TrimSpace(v), ",") {
			if p = strings.TrimPrefix(strings.TrimSpace(p), "job_submit/"); p != "" && p != "(null)" {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}

// logLeadership logs when this controller starts or stops acting, and
// why.
func (c *Controller) logLeadership(lead bool, why string, off, pluginOff bool) {
	d := c.duties
	state := why
	switch {
	case lead && pluginOff:
		state = "off: gangtopo is not in slurm.conf's JobSubmitPlugins; the controller puts back its pins and holds and makes no new change"
	case lead && off:
		state = "off: actions.enabled is false; the controller puts back its pins and holds and makes no new change"
	case lead:
		state = "acting"
	}
	d.m.leading.Set(b2f(lead && !off))
	if lead == d.leading && state == d.why {
		return
	}
	d.leading, d.why = lead, state
	c.log.Info().Bool("leads", lead).Bool("off", off).Str("state", state).Msg("controller actions")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// dutyMetrics are the duty loop's series.
type dutyMetrics struct {
	round   prometheus.Histogram
	duty    *prometheus.HistogramVec
	dropped prometheus.Counter
	leading prometheus.Gauge
	panics  prometheus.Counter
}

func newDutyMetrics(reg prometheus.Registerer) *dutyMetrics {
	m := &dutyMetrics{
		round: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gangtopo_duty_round_seconds",
			Help: "How long one round of the controller's duties (re-binding, defragmentation, quotas, pins) took.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		duty: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gangtopo_duty_seconds",
			Help: "How long each step of a duty round took: lead (the leader check and config), pins (expired pins undone), rebind, defrag, quota.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"duty"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_duty_states_dropped_total",
			Help: "Published states the duty loop did not work on: a newer one came first (the duties take longer than the poll interval), or it was polled before the last round ended (it may not show that round's changes)."}),
		leading: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_controller_acting",
			Help: "1 while this controller may change Slurm (it leads and actions are on), 0 while it only publishes snapshots."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_duty_panics_total",
			Help: "Duty rounds cut short by a panic (a bug): logged with its stack; the snapshot is published all the same and the next round starts afresh."}),
	}
	reg.MustRegister(m.round, m.duty, m.dropped, m.leading, m.panics)
	return m
}
