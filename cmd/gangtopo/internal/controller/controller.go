package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/clusterfile"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Config is what the controller needs.
type Config struct {
	Topology string // cluster file
	Output   string // snapshot file to publish
	Poll     *slurmstate.PollConfig
	Publish  publish.Options
	// Workload is the typical request mix the fragmentation gauges measure
	// against.
	Workload frag.Workload
	// FeaturePrefix is the plugin's feature_prefix: nodes whose features
	// with it differ from the cluster file are reported ("": no check).
	FeaturePrefix string
	// Rebind, when set, re-binds stale pending jobs after each published
	// snapshot (rebind.go).
	Rebind *RebindSetup
	// Defrag, when set, runs the defragmentation duties after each
	// published snapshot (defrag.go).
	Defrag *DefragSetup
	// Quota, when set, runs the quota duty after each published snapshot
	// (quota.go).
	Quota *QuotaSetup
	// Actions is how the duties' changes reach Slurm (duties.go); needed
	// when any duty is set.
	Actions *ActionsSetup
	// RPCShare, when set, spaces the cycles out to hold the controller's
	// share of slurmctld's RPC time under a bound (rpcshare.go).
	RPCShare *RPCShareSetup
	// AsyncDuties runs the duties in a goroutine of their own, started by
	// the first cycle (the daemon's loop); without it each cycle runs them
	// itself after publishing (--once, tests).
	AsyncDuties bool
	// Wake, when set, serves the wake socket (wake.go); it needs duties
	// and AsyncDuties.
	Wake *WakeSetup
}

// Controller polls and publishes; it is not safe for concurrent cycles
// (the daemon loop runs one at a time).
type Controller struct {
	cfg   Config
	log   zerolog.Logger
	topo  *clusterfile.Watched
	poll  *slurmstate.Poller
	meter *frag.Meter
	m     *metrics

	generation    uint64
	lastTime      atomic.Int64 // Unix ns of the last published snapshot's time
	problems      string       // the last report, to log only changes
	failing       bool
	rebind        *rebinder
	defrag        *defragDuty
	quota         *quotaDuty
	duties        *duties
	dutyPoll      *slurmstate.Poller // the duties' own polls (a Poller is not shared between goroutines)
	dutiesStarted atomic.Bool        // the duty loop was started (Config.AsyncDuties)
	stopDuties    context.CancelFunc // ends the duty loop (Withdraw), once started
	uncovered     bool               // most decided jobs were not covered by the cluster file
	mix           *mixLearner
	share         *rpcShare // Config.RPCShare's state; nil without
	// decidedRunning: the gangs that ran with a gangtopo decision at the
	// last poll (the wakes' filter, read from their goroutines; kept only
	// while wakes are served)
	decidedRunning atomic.Pointer[map[string]bool]
	wake           *wakeServer // Config.Wake's server; nil without
	now            func() time.Time
}

// New loads the topology, checks the output directory, clears what a
// killed predecessor left behind and registers the metrics.
func New(cfg Config, d *daemon.Daemon) (*Controller, error) {
	if cfg.Output == "" {
		return nil, fmt.Errorf("-o/--output: the snapshot file to publish is required")
	}
	topo, err := clusterfile.Watch(cfg.Topology)
	if err != nil {
		return nil, err
	}
	if !cfg.Publish.AllowInsecureDir {
		if err := publish.CheckDir(filepath.Dir(cfg.Output)); err != nil {
			return nil, err
		}
	}
	c := &Controller{cfg: cfg, log: d.Log, topo: topo, poll: slurmstate.NewPoller(cfg.Poll),
		meter: frag.NewMeter(topo.Cluster, &cfg.Workload), mix: newMixLearner(cfg.Workload), now: time.Now}
	if n, err := publish.CleanTemps(cfg.Output); n > 0 || err != nil {
		c.log.Warn().Int("removed", n).AnErr("error", err).Msg("removed temporary files of an interrupted publish")
	}
	h, err := publish.ReadHeader(cfg.Output)
	if err != nil {
		c.log.Warn().Err(err).Msg("the existing snapshot is unreadable; the next one replaces it")
	}
	c.generation = h.Generation
	start := c.now()
	if !h.Time.IsZero() {
		start = h.Time
	}
	c.lastTime.Store(start.UnixNano())
	c.m = newMetrics(d.Registry, c.age)
	if cfg.RPCShare != nil {
		c.share = newRPCShare(*cfg.RPCShare, d.Log, d.Space, d.Registry)
	}
	if err := c.newDuties(cfg, d); err != nil {
		return nil, err
	}
	c.rememberRuns(cfg.Output)
	if cfg.Wake != nil {
		if c.duties == nil || !cfg.AsyncDuties {
			return nil, fmt.Errorf("--wake-socket: a wake asks for the duties of a cycle: give --config, and no --once")
		}
		if c.wake, err = listenWake(c, *cfg.Wake); err != nil {
			return nil, err
		}
		c.log.Info().Str("socket", cfg.Wake.Path).Msg("wakes served: gangtopo wake (slurm.conf EpilogSlurmctld) asks for a cycle at once")
	}
	c.log.Info().Str("topology", topo.Cluster.String()).Str("output", cfg.Output).Uint64("generation", h.Generation).Msg("controller ready")
	return c, nil
}

// noteDecidedRunning records the gangs that run with a gangtopo decision
// in st, on two nodes or more (ranDecided, the wakes' filter).
func (c *Controller) noteDecidedRunning(st *slurmstate.State) {
	m := map[string]bool{}
	for _, j := range st.Jobs {
		if runs[strings.ToUpper(j.State)] && len(j.Nodes) > 1 && decided(j.Facts.AdminComment) {
			m[j.ID] = true
		}
	}
	c.decidedRunning.Store(&m)
}

func (c *Controller) age() float64 {
	return c.now().Sub(time.Unix(0, c.lastTime.Load())).Seconds()
}

// Cycle runs one poll-build-publish round.
func (c *Controller) Cycle(ctx context.Context) error {
	start := c.now()
	stage, err := c.cycle(ctx, start)
	c.m.pollDuration.Observe(c.now().Sub(start).Seconds())
	if err != nil {
		c.m.pollErrors.WithLabelValues(stage).Inc()
		c.failing = true
		return fmt.Errorf("%s stage: %w", stage, err)
	}
	if c.failing {
		c.log.Info().Uint64("generation", c.generation).Msg("polling recovered; publishing again")
		c.failing = false
	}
	return nil
}

// cycle does the work and names the stage that failed.
func (c *Controller) cycle(ctx context.Context, start time.Time) (string, error) {
	if err := c.reloadTopology(); err != nil {
		c.m.pollErrors.WithLabelValues("topology").Inc() // counted, not fatal: the old topology stays
		c.log.Error().Err(err).Msg("topology file changed but does not load; keeping the previous topology")
	}
	st, runs, err := c.poll.Poll(ctx)
	c.m.observeRuns(runs)
	if err != nil {
		var pe *slurmstate.PollError
		if errors.As(err, &pe) {
			return pe.Source.Label(), err
		}
		return "build", err
	}
	s, rep, err := slurmstate.BuildSnapshot(c.topo.Cluster, st, start, c.cfg.FeaturePrefix)
	if err != nil {
		return "build", err
	}
	c.logProblems(&rep)
	c.learnMix(s)
	if c.wake != nil {
		c.noteDecidedRunning(st)
	}
	c.m.observeDecisions(st.Decisions)
	c.logCoverage(st.Decisions)
	s.Generation = publish.NextGeneration(c.generation, start)
	if err := publish.WriteSnapshot(c.cfg.Output, s, st.Describe(c.cfg.Poll), c.cfg.Publish); err != nil {
		return "publish", err
	}
	c.generation = s.Generation
	c.lastTime.Store(s.Time.UnixNano())
	c.m.observeSnapshot(s, &rep)
	c.m.jobsAge.Set(st.JobsAge.Seconds())
	c.m.observeFrag(c.meter, s)
	ev := c.log.Debug().Uint64("generation", s.Generation).Int("jobs", len(s.Jobs)).Int("pending", len(st.Queued))
	for _, r := range runs {
		ev = ev.Dur("took_"+r.Source.Label(), r.Duration).Int("bytes_"+r.Source.Label(), r.Bytes)
	}
	ev.Bool("jobs_fresh", st.JobsFresh).Dur("jobs_age", st.JobsAge).Dur("took", c.now().Sub(start)).Msg("snapshot published")
	if c.share != nil {
		c.share.setRelease(st.Version)
		c.share.step(ctx, start, c.poll)
	}
	// after publishing: the plugin never waits for the duties; and only
	// with a job listing of this poll's: what acts on jobs does not act
	// twice on one listing (slurmstate's jobsbehind.go)
	if c.duties != nil && st.JobsFresh {
		// at: when the jobs were read, for the round's check that it
		// acts on nothing read before the last round ended
		ds := dutyState{s: s, st: st, at: start.Add(-st.JobsAge), cluster: c.topo.Cluster, meter: c.meter}
		if c.cfg.AsyncDuties && c.dutiesStarted.CompareAndSwap(false, true) {
			dctx, stop := context.WithCancel(ctx)
			c.stopDuties = stop
			go c.RunDuties(dctx)
		}
		if c.cfg.AsyncDuties {
			c.duties.offer(ds)
		} else {
			c.round(ctx, ds)
		}
	}
	return "", nil
}

// newDuties sets the duties up that cfg names (none: the controller only
// publishes).
func (c *Controller) newDuties(cfg Config, d *daemon.Daemon) error {
	path, gt := "", ctld.Config{}
	switch {
	case cfg.Rebind != nil:
		path, gt = cfg.Rebind.ConfigPath, cfg.Rebind.Config
	case cfg.Defrag != nil:
		path, gt = cfg.Defrag.ConfigPath, cfg.Defrag.Config
	case cfg.Quota != nil:
		path, gt = cfg.Quota.ConfigPath, cfg.Quota.Config
	default:
		return nil
	}
	if cfg.Poll.JobsFrom != slurmstate.SqueueJSON {
		return fmt.Errorf("the controller's duties (gangtopo.yaml's rebind:, defrag: and quota: sections; re-binding is on by default) need jobs from squeue --json: use --jobs-from squeue, or run without --config")
	}
	if cfg.Actions == nil {
		return fmt.Errorf("controller: duties set without an ActionsSetup (how their changes reach Slurm)")
	}
	c.duties = newDuties(path, gt, *cfg.Actions, c, d.Registry)
	// the defragmentation's re-check reads Slurm afresh: its polls wait
	// for their own job listing
	fresh := *cfg.Poll
	fresh.JobsWait = 0
	c.dutyPoll = slurmstate.NewPoller(&fresh)
	door := c.duties.door
	if cfg.Rebind != nil {
		c.rebind = newRebinder(*cfg.Rebind, door, c.log, d.Registry)
		c.log.Info().Str("config", path).Bool("enabled", gt.Rebind.Enabled).Int("max_per_cycle", gt.Rebind.MaxPerCycle).
			Dur("job_interval", gt.Rebind.JobInterval).Msg("re-binding of stale pending jobs")
	}
	if cfg.Defrag != nil {
		c.defrag = newDefragDuty(*cfg.Defrag, door, c.log, d.Registry, func() time.Time { return c.now() })
	}
	if cfg.Quota != nil {
		c.quota = newQuotaDuty(*cfg.Quota, door, c.log, d.Registry, func() time.Time { return c.now() })
	}
	return nil
}

// view is the defragmentation's view of a duty state.
func (s dutyState) view() *defragrun.View { return defragrun.NewView(s.s, s.st, s.at) }

// observer polls Slurm afresh on the duty loop's own poller, for the
// defragmentation's re-check before it requeues anything.
func (c *Controller) observer(cluster *topology.Cluster) observeFunc {
	return func(ctx context.Context) (*defragrun.View, error) {
		at := c.now()
		st, _, err := c.dutyPoll.Poll(ctx)
		if err != nil {
			return nil, err
		}
		return defragrun.FromState(st, cluster, c.cfg.FeaturePrefix, at)
	}
}

// learnMix feeds the snapshot's running jobs to the mix learner and
// attaches the learned mix; when it changes, the fragmentation gauges
// measure against it too.
func (c *Controller) learnMix(s *occupancy.Snapshot) {
	mix, changed, err := c.mix.observe(c.topo.Cluster, s)
	if err != nil {
		c.log.Warn().Err(err).Msg("learning the request mix; publishing the previous one")
	}
	s.Mix = mix
	if !changed {
		return
	}
	if w, err := frag.MixWorkload(c.topo.Cluster, mix); err == nil {
		c.meter = frag.NewMeter(c.topo.Cluster, &w)
	}
	c.m.mixJobs.Set(float64(mix.Jobs))
	c.log.Info().Int("jobs", mix.Jobs).Int("node_shapes", len(mix.Node)).Int("gang_shapes", len(mix.Gangs)).Msg("request mix learned from the jobs seen running")
}

func (c *Controller) reloadTopology() error {
	changed, err := c.topo.Reload()
	if err != nil || !changed {
		return err
	}
	c.meter = frag.NewMeter(c.topo.Cluster, &c.cfg.Workload)
	c.m.resetTopologySeries()
	c.log.Info().Str("topology", c.topo.Cluster.String()).Str("hash", c.topo.Cluster.Hash).Msg("topology file changed; using the new topology")
	return nil
}

// minUncovered is how many jobs left as submitted for want of coverage
// make the warning: a few jobs in a partition gangtopo does not know are
// normal.
const minUncovered = 4

// logCoverage warns when most jobs gangtopo decided about were left as
// submitted because the cluster file lacks their partition or nodes: gangtopo
// is then in effect off (a cluster file built without --partition, or out of
// date). It logs when that starts and when it ends.
func (c *Controller) logCoverage(d slurmstate.Decisions) {
	bad := d.MostlyNotCovered(minUncovered)
	switch {
	case bad && !c.uncovered:
		c.log.Warn().Int("not_covered", d.NotCovered()).Int("decided", d.Total()).Str("topology", c.cfg.Topology).
			Msg("most jobs gangtopo decided about were left as submitted because the cluster file does not cover their partition or nodes: rebuild it with the partitions (gangtopo topology build --partition NAME) and copy it to the controller and the plugin (gangtopo why JOBID names the partition)")
	case !bad && c.uncovered:
		c.log.Info().Int("not_covered", d.NotCovered()).Int("decided", d.Total()).Msg("the cluster file covers most decided jobs again")
	}
	c.uncovered = bad
}

// logProblems logs the disagreements between Slurm and the topology when
// they differ from the last poll's.
func (c *Controller) logProblems(rep *slurmstate.Report) {
	lines := rep.Lines()
	joined := strings.Join(lines, "\n")
	if joined == c.problems {
		return
	}
	c.problems = joined
	if len(lines) == 0 {
		c.log.Info().Msg("Slurm and the topology agree again")
		return
	}
	for _, l := range lines {
		c.log.Warn().Str("problem", l).Msg("Slurm and the topology disagree")
	}
}
