package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
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
//     type (counted from the commands it ran: sinfo and scontrol show
//     nodes send REQUEST_NODE_INFO and REQUEST_PARTITION_INFO, squeue and
//     scontrol show job REQUEST_JOB_INFO, sdiag REQUEST_STATS_INFO, as
//     sdiag's counters around each command showed on 22.05 and 26.05)
//     times that type's mean time in the window: sdiag
//     counts by message type, not by client, and the controller's listings
//     wait for the same locks as anyone's of their type. The share is that
//     over all the RPC time slurmctld served in the window. The duties'
//     changes through the door count alike (scontrol update of a job:
//     REQUEST_UPDATE_JOB; requeue, reservations: theirs); what they read
//     on their own (the defragmentation's re-check and reservation
//     listings) is not counted.
//  3. The period between cycles is scaled by share / bound, at most
//     doubled or halved at once, and kept between the interval and the
//     longest the plugin allows: half its max_snapshot_age (past that age
//     the plugin places nothing, so fresh snapshots come first and the
//     share may then stay above the bound; the log and the gauge say so).
//     Within a tenth of the bound the period stays.
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

// shareDeadband: a share within this fraction of the bound leaves the
// period as it is.
const shareDeadband = 0.1

// messageTypes are the RPCs each command sends slurmctld.
var messageTypes = map[slurmstate.Source][]string{
	slurmstate.SinfoJSON:         {"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"},
	slurmstate.ScontrolNodesJSON: {"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"},
	slurmstate.ScontrolNodes:     {"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"},
	slurmstate.SqueueJSON:        {"REQUEST_JOB_INFO"},
	slurmstate.ScontrolJobs:      {"REQUEST_JOB_INFO"},
	slurmstate.Sdiag:             {"REQUEST_STATS_INFO"},
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
	period time.Duration
	capped bool // the last window's share was above the bound at the longest period

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
	return r
}

// count adds the RPCs of the commands a poll ran.
func (r *rpcShare) count(runs []slurmstate.Run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, run := range runs {
		for _, t := range messageTypes[run.Source] {
			r.own[t]++
		}
	}
}

// counting wraps the door's runner: each change it runs counts as its
// message type.
func (r *rpcShare) counting(run actuate.Runner) actuate.Runner {
	return func(ctx context.Context, timeout time.Duration, cmd string, args ...string) (string, error) {
		if t := changeType(cmd, args); t != "" {
			r.mu.Lock()
			r.own[t]++
			r.mu.Unlock()
		}
		return run(ctx, timeout, cmd, args...)
	}
}

// changeType is the RPC a change's command sends ("" for one not known).
func changeType(cmd string, args []string) string {
	if cmd != "scontrol" || len(args) < 2 {
		return ""
	}
	what := strings.ToUpper(args[1])
	switch strings.ToLower(args[0]) {
	case "update":
		switch {
		case strings.HasPrefix(what, "JOBID="):
			return "REQUEST_UPDATE_JOB"
		case strings.HasPrefix(what, "RESERVATIONNAME="):
			return "REQUEST_UPDATE_RESERVATION"
		}
	case "requeue":
		return "REQUEST_JOB_REQUEUE"
	case "create":
		return "REQUEST_CREATE_RESERVATION"
	case "delete":
		return "REQUEST_DELETE_RESERVATION"
	}
	return ""
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
	delta, ok := st.Sub(r.last)
	window := now.Sub(r.lastAt)
	r.mu.Lock()
	own := r.own
	r.own = map[string]int64{}
	r.mu.Unlock()
	r.last, r.lastAt = st, now
	// sdiag's own RPC is in the next reading's counters, not this one's
	r.count([]slurmstate.Run{{Source: slurmstate.Sdiag}})
	if !ok {
		return // the first reading, or the counters were reset: a new window
	}
	share, ok := estimateShare(delta, own)
	if !ok {
		return
	}
	r.share.Set(100 * share)
	next := nextPeriod(r.period, share, r.cfg)
	capped := share > r.cfg.Max && next == r.cfg.Longest
	ev := r.log.Debug()
	switch {
	case capped && !r.capped:
		ev = r.log.Warn()
	case next != r.period:
		ev = r.log.Info()
	}
	r.capped = capped
	ev.Float64("share_percent", round2(100*share)).Float64("max_percent", 100*r.cfg.Max).Dur("window", window.Round(time.Millisecond)).
		Dur("period", r.period).Dur("next_period", next).Msg(shareMessage(share, next, r.cfg))
	r.period = next
	r.space(next)
}

func shareMessage(share float64, next time.Duration, cfg RPCShareSetup) string {
	switch {
	case share > cfg.Max && next == cfg.Longest:
		return "the controller's share of slurmctld's RPC time is above --max-rpc-share at the longest period the plugin's max_snapshot_age allows"
	case share > cfg.Max:
		return "the controller's share of slurmctld's RPC time is above --max-rpc-share: cycles spaced out"
	default:
		return "the controller's share of slurmctld's RPC time"
	}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// estimateShare is the controller's share of the RPC time in delta (what
// slurmctld served in a window, by type), own being its RPCs there by type
// (step 2); ok is false when slurmctld served nothing.
func estimateShare(delta map[string]slurmstate.RPCCount, own map[string]int64) (float64, bool) {
	var total, mine float64
	for t, c := range delta {
		total += float64(c.TotalUs)
		if n := min(own[t], c.Count); n > 0 {
			mine += float64(c.TotalUs) * float64(n) / float64(c.Count)
		}
	}
	if total <= 0 {
		return 0, false
	}
	return mine / total, true
}

// nextPeriod is the period after a window with share at period p (step 3).
func nextPeriod(p time.Duration, share float64, cfg RPCShareSetup) time.Duration {
	f := share / cfg.Max
	if f > 1-shareDeadband && f < 1+shareDeadband {
		return p
	}
	f = min(max(f, 0.5), 2)
	next := time.Duration(float64(p) * f).Round(100 * time.Millisecond)
	return min(max(next, cfg.Interval), cfg.Longest)
}
