package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Holding the controller's share of slurmctld's RPC time (--max-rpc-share).
//
// Every poll lists the nodes, and every few polls the jobs; each listing is
// an RPC that waits for slurmctld's locks behind its schedulers like any
// client's, longer the larger the backlog (the scale lab's tables in
// docs/benchmarks.md). A site whose slurmctld has little RPC time to spare
// may bound the controller's share of it; the controller then spaces its
// cycles out so that the share stays under the bound:
//
//  1. About every six intervals it reads sdiag (one RPC more,
//     REQUEST_STATS_INFO) and subtracts the reading before: what
//     slurmctld served in between, by message type.
//  2. Its own RPC time in that window is estimated as its own RPCs of each
//     type times that type's mean time in the window: sdiag counts by
//     message type, not by client, and the controller's requests wait for
//     the same locks as anyone's of their type. Its own RPCs are counted
//     from every Slurm command the process runs (slurmstate's
//     ObserveCommands: the polls' listings, the duties' changes and reads,
//     sdiag itself; commandTypes maps each to its RPCs). The share is that
//     over all the RPC time slurmctld served, summed over the last four
//     windows (shareHorizon).
//  3. A window whose own share is above the bound lengthens the period
//     between cycles at once, by share / bound (at most doubled); the
//     period shortens only as the share over the four windows allows, by
//     that share / bound (at most halved); within a tenth of the bound it
//     stays. It is kept between the interval and the longest the plugin
//     allows: half its max_snapshot_age (past that age the plugin places
//     nothing, so fresh snapshots come first and the share may then stay
//     above the bound; the log and the gauge say so).
//
// A reading after sdiag's counters were reset (sdiag --reset, slurmctld's
// restart or its daily reset) starts a new window. A failed sdiag is
// logged and counted, the period stays as it was, and sdiag is read again
// a window later. What it costs:
// snapshots describe Slurm up to one period ago, and the duties, which run
// after polls, come as much later; gangtopo_daemon_cycle_period_seconds
// shows the period and gangtopo_slurmctld_rpc_share_percent the share.

// RPCShareSetup bounds the controller's share of slurmctld's RPC time.
type RPCShareSetup struct {
	// Max is the bound, a fraction of slurmctld's RPC time (0.05: 5%).
	Max float64
	// Interval is the daemon's interval, the shortest period; Longest the
	// longest, half the plugin's max_snapshot_age (at least Interval).
	Interval, Longest time.Duration
}

// sdiagWindow is how many intervals apart sdiag is read.
const sdiagWindow = 6

// shareHorizon is how many windows the share is taken over. One window is
// too short: a listing that arrives while backfill holds slurmctld's locks
// waits for them, one that does not answers at once, so in the scale lab
// one window's share went from next to nothing to a large part of
// slurmctld's RPC time and back, and the period with it.
const shareHorizon = 4

// horizonShare adds a window's own and served time (µs) and returns the
// share over the last shareHorizon windows.
func (r *rpcShare) horizonShare(ownUs, servedUs float64) float64 {
	r.recent = append(r.recent, [2]float64{ownUs, servedUs})
	if len(r.recent) > shareHorizon {
		r.recent = r.recent[1:]
	}
	var own, served float64
	for _, w := range r.recent {
		own, served = own+w[0], served+w[1]
	}
	return own / served
}

// shareDeadband: a share within this fraction of the bound leaves the
// period as it is.
const shareDeadband = 0.1

// commandTypes are the RPCs a Slurm command sends slurmctld, release
// being the Slurm release the polls report ("" before the first), as
// sdiag's counters around each command showed on 22.05.8 and 26.05.5
// (sinfo, scontrol show nodes, squeue, sdiag; squeue --json for one job on
// 24.11.5 too) or as the command's request says (the rest); nil for one
// that sends slurmctld nothing the estimate knows (sacctmgr talks to
// slurmdbd).
func commandTypes(name string, args []string, release string) []string {
	switch name {
	case "sinfo":
		return []string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"}
	case "squeue":
		// squeue --json for one job: 22.05 loads every job and prints
		// the one asked for; 24.11 and 26.05 ask for the federation and
		// that job alone
		if oneJob(args) && !strings.HasPrefix(release, "22.") {
			return []string{"REQUEST_FED_INFO", "REQUEST_JOB_INFO_SINGLE"}
		}
		return []string{"REQUEST_JOB_INFO"}
	case "sdiag":
		return []string{"REQUEST_STATS_INFO"}
	case "scontrol":
		return scontrolTypes(args)
	}
	return nil
}

// oneJob says whether squeue's arguments ask for one job (--jobs=ID):
// squeue then loads that job alone.
func oneJob(args []string) bool {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--jobs="); ok && !strings.ContainsAny(v, ",_+") {
			return true
		}
	}
	return false
}

// scontrolTypes are the RPCs of scontrol's words (options such as -a, -d,
// -o and --json skipped).
func scontrolTypes(args []string) []string {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, strings.ToLower(a))
		}
	}
	if len(words) == 0 {
		return nil
	}
	arg := func(i int) string {
		if i < len(words) {
			return words[i]
		}
		return ""
	}
	switch words[0] {
	case "show":
		switch what := arg(1); {
		case strings.HasPrefix(what, "node"):
			return []string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"}
		case what == "job" && arg(2) != "":
			return []string{"REQUEST_JOB_INFO_SINGLE"}
		case what == "job":
			return []string{"REQUEST_JOB_INFO"}
		case strings.HasPrefix(what, "res"):
			return []string{"REQUEST_RESERVATION_INFO"}
		case what == "config":
			return []string{"REQUEST_BUILD_INFO"}
		}
	case "ping":
		return []string{"REQUEST_PING"}
	case "update":
		switch what := arg(1); {
		case strings.HasPrefix(what, "jobid="):
			return []string{"REQUEST_UPDATE_JOB"}
		case strings.HasPrefix(what, "reservationname="):
			return []string{"REQUEST_UPDATE_RESERVATION"}
		}
	case "requeue":
		return []string{"REQUEST_JOB_REQUEUE"}
	case "create":
		return []string{"REQUEST_CREATE_RESERVATION"}
	case "delete":
		return []string{"REQUEST_DELETE_RESERVATION"}
	}
	return nil
}

// rpcShare is the bound's state; the cycle alone uses it.
type rpcShare struct {
	cfg    RPCShareSetup
	log    zerolog.Logger
	space  func(time.Duration) // daemon.Space
	last   *slurmstate.RPCStats
	lastAt time.Time
	mu     sync.Mutex       // own: the duty loop's changes count from its goroutine
	own    map[string]int64 // the controller's RPCs since the last reading, by type
	// release is the Slurm release the polls report (commandTypes)
	release string
	period  time.Duration
	capped  bool // the last window's share was above the bound at the longest period
	// recent are the last windows' own and served RPC time, µs, oldest
	// first (at most shareHorizon)
	recent [][2]float64

	share  prometheus.Gauge
	errors prometheus.Counter
}

func newRPCShare(cfg RPCShareSetup, log zerolog.Logger, space func(time.Duration), reg prometheus.Registerer) *rpcShare {
	cfg.Longest = max(cfg.Longest, cfg.Interval)
	r := &rpcShare{cfg: cfg, log: log, space: space, own: map[string]int64{}, period: cfg.Interval,
		share: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_slurmctld_rpc_share_percent",
			Help: "The controller's estimated share of slurmctld's RPC time over the last sdiag window (--max-rpc-share): its listings' RPCs times their types' mean time, over all the RPC time served."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "gangtopo_sdiag_errors_total",
			Help: "sdiag reads that failed (--max-rpc-share): the cycle period stayed as it was."}),
	}
	reg.MustRegister(r.share, r.errors)
	// every Slurm command of the process counts from now on (one
	// controller a process)
	slurmstate.ObserveCommands(r.observe)
	return r
}

// observe counts a command the process runs (slurmstate.ObserveCommands).
func (r *rpcShare) observe(name string, args []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range commandTypes(name, args, r.release) {
		r.own[t]++
	}
}

// setRelease records the Slurm release a poll reported ("" changes
// nothing).
func (r *rpcShare) setRelease(v string) {
	if v == "" {
		return
	}
	r.mu.Lock()
	r.release = v
	r.mu.Unlock()
}

// step reads sdiag when a window has passed since the last reading and
// spaces the cycles as the share says (steps 1 to 3).
func (r *rpcShare) step(ctx context.Context, now time.Time, p *slurmstate.Poller) {
	if !r.lastAt.IsZero() && now.Sub(r.lastAt) < sdiagWindow*r.cfg.Interval {
		return
	}
	st, err := p.ReadRPCStats(ctx)
	if err != nil {
		// tried again a window later; the reading before stays to subtract
		// from, and the own RPCs go on adding up
		r.lastAt = now
		r.errors.Inc()
		r.log.Warn().Err(err).Dur("period", r.period).Msg("sdiag failed: the controller's share of slurmctld's RPC time is not known; the cycle period stays")
		return
	}
	// own holds this reading's sdiag, whose RPC is in the next reading's
	// counters, and the window's counters hold the one before: one each
	r.mu.Lock()
	own := r.own
	r.own = map[string]int64{}
	r.mu.Unlock()
	delta, ok := st.Sub(r.last)
	window := now.Sub(r.lastAt)
	r.last, r.lastAt = st, now
	if !ok {
		return // the first reading, or the counters were reset: a new window
	}
	windowShare, mineUs, totalUs, ok := estimateShare(delta, own)
	if !ok {
		return
	}
	share := r.horizonShare(mineUs, totalUs)
	r.share.Set(100 * share)
	next := nextPeriod(r.period, windowShare, share, r.cfg)
	capped := share > r.cfg.Max && next == r.cfg.Longest
	ev := r.log.Debug()
	switch {
	case capped && !r.capped:
		ev = r.log.Warn()
	case next != r.period:
		ev = r.log.Info()
	}
	r.capped = capped
	ev.Float64("share_percent", round2(100*share)).Float64("max_percent", 100*r.cfg.Max).
		Float64("window_share_percent", round2(100*windowShare)).Dur("window", window.Round(time.Millisecond)).
		Float64("window_own_ms", round2(mineUs/1000)).Float64("window_served_ms", round2(totalUs/1000)).Interface("own_rpcs", own).
		Dur("period", r.period).Dur("next_period", next).Msg(shareMessage(share, r.period, next, r.cfg))
	r.period = next
	r.space(next)
}

func shareMessage(share float64, period, next time.Duration, cfg RPCShareSetup) string {
	switch {
	case share > cfg.Max && next == cfg.Longest:
		return "the controller's share of slurmctld's RPC time is above --max-rpc-share at the longest period the plugin's max_snapshot_age allows"
	case next > period:
		return "the controller's share of slurmctld's RPC time in the last window is above --max-rpc-share: cycles spaced out"
	case next < period:
		return "the controller's share of slurmctld's RPC time is below --max-rpc-share: cycles closer together"
	default:
		return "the controller's share of slurmctld's RPC time"
	}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// estimateShare is the controller's share of the RPC time in delta (what
// slurmctld served in a window, by type), own being its RPCs there by type
// (step 2), with the controller's estimated time and all the time served
// (µs); ok is false when slurmctld served nothing.
func estimateShare(delta map[string]slurmstate.RPCCount, own map[string]int64) (share, mineUs, totalUs float64, ok bool) {
	for t, c := range delta {
		totalUs += float64(c.TotalUs)
		if n := min(own[t], c.Count); n > 0 {
			mineUs += float64(c.TotalUs) * float64(n) / float64(c.Count)
		}
	}
	if totalUs <= 0 {
		return 0, 0, 0, false
	}
	return mineUs / totalUs, mineUs, totalUs, true
}

// nextPeriod is the period after a window whose own share was window, the
// share over the horizon being horizon (step 3): a window above the bound
// lengthens the period at once, by window / bound (at most doubled); it
// shortens only as the horizon allows, by horizon / bound (at most
// halved). Backing off at once and coming back as the longer record shows
// room keeps one quiet window from undoing the spacing a busy one called
// for (the scale lab's windows alternated).
func nextPeriod(p time.Duration, window, horizon float64, cfg RPCShareSetup) time.Duration {
	f := 1.0
	switch {
	case window > cfg.Max*(1+shareDeadband):
		f = min(window/cfg.Max, 2)
	case horizon < cfg.Max*(1-shareDeadband):
		f = max(horizon/cfg.Max, 0.5)
	}
	next := time.Duration(float64(p) * f).Round(100 * time.Millisecond)
	return min(max(next, cfg.Interval), cfg.Longest)
}
