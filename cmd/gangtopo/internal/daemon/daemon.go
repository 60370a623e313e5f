package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Options are the settings every role shares (the daemon's common flags).
type Options struct {
	Role        string
	Interval    time.Duration
	MetricsAddr string // host:port for /metrics and /healthz; empty: none
	LogFormat   string // json or console
	LogLevel    string // debug, info, warn, error
	Once        bool   // run one cycle and return its error
	Version     string
	// Binary, when set, is watched before every cycle and at the stop:
	// Run returns a *BinaryGone once it is removed or replaced (binary.go).
	Binary *Binary
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, not %s", o.Interval)
	}
	if o.LogFormat != "json" && o.LogFormat != "console" {
		return fmt.Errorf("--log-format %q: want json or console", o.LogFormat)
	}
	if _, err := zerolog.ParseLevel(o.LogLevel); err != nil || o.LogLevel == "" {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.LogLevel)
	}
	if o.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: want host:port (e.g. :9464): %v", o.MetricsAddr, err)
		}
	}
	return nil
}

// Daemon is the shared core of one running role.
type Daemon struct {
	Log      zerolog.Logger
	Registry *prometheus.Registry
	opts     Options

	cycles      *prometheus.CounterVec
	nextCycle   prometheus.Gauge
	lastSuccess atomic.Int64 // Unix nanoseconds
	period      atomic.Int64 // the pace of successful cycles, ns (0: the interval)
	// freshFor: the age past which the snapshots the cycles publish go
	// unused (the plugin's max_snapshot_age; 0: none), set by KeepFresh
	freshFor time.Duration
	// spacing: the period the role asks for (Space; 0: none), ns
	spacing atomic.Int64
	// wake: a cycle asked for now (Wake); backingOff: the last cycle
	// failed, so wakes are refused
	wake       chan struct{}
	backingOff atomic.Bool
}

// MinWakeGap is the least time from the start of one cycle to the start
// of a cycle asked for by Wake: however many ask, the cycles come at most
// this often.
const MinWakeGap = time.Second

// Wake asks for a cycle now rather than at the next interval: it starts
// once the one running (if any) ends, at least MinWakeGap after the last
// one started. Wakes asked for before it starts make one cycle. While
// cycles back off after a failure, or are spaced out beyond the interval
// by the role (Space: the controller's RPC share), Wake asks for nothing
// and says why: slurmctld is not asked sooner than they allow.
func (d *Daemon) Wake() (refused string) {
	switch {
	case d.backingOff.Load():
		return "the cycles back off after a failed one"
	case time.Duration(d.spacing.Load()) > d.opts.Interval:
		return "the cycles are spaced out to hold the controller's share of slurmctld's RPC time (--max-rpc-share)"
	}
	select {
	case d.wake <- struct{}{}:
	default: // one is asked for already
	}
	return ""
}

// Space asks for successful cycles to start at least period apart from
// the next one on (0: as the pacing alone says): the controller's bound
// on its share of slurmctld's RPC time. The role keeps period within what
// its published state allows (KeepFresh); Run only applies it.
func (d *Daemon) Space(period time.Duration) { d.spacing.Store(int64(max(period, 0))) }

// KeepFresh tells the pacing that what a cycle publishes is used for at
// most age (the plugin's max_snapshot_age): slow cycles are then spaced
// so that the next lands before the last expires, where that leaves the
// cycles at most half the time (pace). Call it before Run.
func (d *Daemon) KeepFresh(age time.Duration) { d.freshFor = age }

// New makes the core: logs go to logOut, metrics to a fresh registry that
// already holds the Go runtime and process collectors.
func New(opts Options, logOut io.Writer) (*Daemon, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	level, _ := zerolog.ParseLevel(opts.LogLevel)
	if opts.LogFormat == "console" {
		logOut = zerolog.ConsoleWriter{Out: logOut, TimeFormat: time.RFC3339}
	}
	d := &Daemon{
		Log:      zerolog.New(logOut).Level(level).With().Timestamp().Str("role", opts.Role).Logger(),
		Registry: prometheus.NewRegistry(),
		opts:     opts,
		wake:     make(chan struct{}, 1),
	}
	d.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gangtopo_build_info", Help: "Always 1; labels say the gangtopo version and daemon role.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "role": opts.Role},
	})
	info.Set(1)
	d.cycles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gangtopo_daemon_cycles_total", Help: "Cycles the daemon ran, by result (ok or error).",
	}, []string{"result"})
	d.nextCycle = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gangtopo_daemon_cycle_period_seconds",
		Help: "Seconds from the start of the last cycle to the start of the next: the interval, more where a slow cycle spaced them out, failed cycles back off or the controller holds its share of slurmctld's RPC time (--max-rpc-share).",
	})
	d.nextCycle.Set(opts.Interval.Seconds())
	d.Registry.MustRegister(info, d.cycles, d.nextCycle)
	return d, nil
}

// Once says whether the daemon runs one cycle only (--once).
func (d *Daemon) Once() bool { return d.opts.Once }

// Interval is the time between cycles.
func (d *Daemon) Interval() time.Duration { return d.opts.Interval }

// Run calls cycle now and then every interval (paced: see pace) until ctx
// ends. With
// Options.Once it runs one cycle and returns its error. The metrics
// endpoint (if configured) serves while Run runs, and is closed when Run
// returns. With Options.Binary, Run returns a *BinaryGone before the first
// cycle that finds the binary removed or replaced, and when ctx ends with
// the binary removed (a stop for good, told apart from a restart).
func (d *Daemon) Run(ctx context.Context, cycle func(context.Context) error) error {
	if d.opts.Once {
		return d.runCycle(ctx, cycle)
	}
	stop, err := d.serveMetrics()
	if err != nil {
		return err
	}
	defer stop()
	d.Log.Info().Str("version", d.opts.Version).Dur("interval", d.opts.Interval).Str("metrics_addr", d.opts.MetricsAddr).Msg("daemon started")
	failures, spaced := 0, false
	for {
		if gone := d.binaryGone(); gone != nil {
			return gone
		}
		start := time.Now()
		err := d.runCycle(ctx, cycle) // logged and counted; the loop goes on
		took := time.Since(start)
		if err != nil {
			failures++
		} else {
			failures = 0
		}
		paced := pace(d.opts.Interval, took, failures, d.freshFor)
		next := max(paced, time.Duration(d.spacing.Load()))
		if failures == 0 {
			d.period.Store(int64(next))
		}
		d.nextCycle.Set(next.Seconds())
		switch {
		case failures > 0:
			d.Log.Warn().Int("failures", failures).Dur("next_in", next-took).Msg("backing off: the next cycle waits longer after each failed one")
		case paced > d.opts.Interval:
			spaced = true
			d.Log.Info().Dur("took", took).Dur("next_in", next-took).Msg("cycles spaced out: a cycle that takes longer than a third of the interval is followed by twice its time")
		case spaced:
			spaced = false
			d.Log.Info().Dur("took", took).Dur("interval", d.opts.Interval).Msg("cycles back to the interval")
		}
		d.backingOff.Store(failures > 0)
		if failures > 0 {
			d.drainWake() // asked for while failing: the back-off decides
		}
		if !d.wait(ctx, start, next) {
			d.Log.Info().Msg("daemon stopping")
			if gone := d.binaryGone(); gone != nil && !gone.Replaced {
				return gone
			}
			return nil
		}
	}
}

// wait waits until the next cycle is due: next after start, or sooner
// when Wake asks (no sooner than MinWakeGap after start). It returns
// false when ctx ends first.
func (d *Daemon) wait(ctx context.Context, start time.Time, next time.Duration) bool {
	timer := time.NewTimer(max(next-time.Since(start), 0))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		d.drainWake() // the cycle due now serves it
		return true
	case <-d.wake:
	}
	if gap := MinWakeGap - time.Since(start); gap > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(gap):
		}
	}
	d.drainWake() // asked for since: this cycle serves it too
	d.Log.Debug().Msg("a cycle now, asked for by a wake")
	return true
}

// drainWake drops a wake asked for already.
func (d *Daemon) drainWake() {
	select {
	case <-d.wake:
	default:
	}
}

// Pacing. A cycle starts an interval after the last one started, as long
// as cycles are short. One that takes longer than a third of the interval
// (a poll of a large backlog, whose squeue --json outgrew the command
// timeout in the scale lab) is followed by twice its time, so
// that the controller's commands, and slurmctld's answers to them, take at
// most a third of the time whatever the cluster's size, instead of running
// back to back. After failed cycles the wait doubles with each, up to ten
// intervals or two minutes: a slurmctld that is down or overloaded is not
// asked again at once (a command killed by its timeout still cost
// slurmctld its answer). When what a cycle publishes expires (KeepFresh:
// the plugin's max_snapshot_age), a slow cycle whose next snapshot would
// land after the last expires is followed after twice its time instead of
// three times (as soon as the cycles may run and leave half the time
// idle): at 1,024 nodes on 26.05 in the scale lab, polls of several
// seconds spaced at three times their time let the plugin's snapshot
// expire between them, and jobs passed as submitted.

// maxBackoff and maxBackoffIntervals bound the wait after failed cycles:
// ten intervals, at most two minutes (or the interval, if longer), so that
// a slurmctld that is back is read again within that.
const (
	maxBackoff          = 2 * time.Minute
	maxBackoffIntervals = 10
)

// pace is the time from the start of a cycle that took took to the start
// of the next, after failures failed cycles in a row (0: it succeeded);
// fresh is KeepFresh's age (0: none).
func pace(interval, took time.Duration, failures int, fresh time.Duration) time.Duration {
	p := max(interval, 3*took)
	if fresh > 0 && p+took >= fresh {
		p = max(interval, 2*took) // the soonest that leaves half the time idle
	}
	if failures > 0 {
		limit := max(interval, min(maxBackoffIntervals*interval, maxBackoff))
		b := interval
		for i := 0; i < failures && b < limit; i++ {
			b *= 2
		}
		p = max(p, min(b, limit))
	}
	return p
}

// binaryGone checks Options.Binary. A check that fails for another
// reason is logged and ignored: the file may well be there.
func (d *Daemon) binaryGone() *BinaryGone {
	if d.opts.Binary == nil {
		return nil
	}
	err := d.opts.Binary.Check()
	var gone *BinaryGone
	if errors.As(err, &gone) {
		return gone
	}
	if err != nil {
		d.Log.Warn().Err(err).Msg("checking the daemon's own binary failed; going on")
	}
	return nil
}

func (d *Daemon) runCycle(ctx context.Context, cycle func(context.Context) error) error {
	err := cycle(ctx)
	if err != nil {
		d.cycles.WithLabelValues("error").Inc()
		if ctx.Err() == nil {
			d.Log.Error().Err(err).Msg("cycle failed; what was published last stays")
		}
		return err
	}
	d.cycles.WithLabelValues("ok").Inc()
	d.lastSuccess.Store(time.Now().UnixNano())
	return nil
}

// Healthy reports whether a cycle succeeded within the last three
// intervals, or three periods where slow cycles spaced them out (pace).
func (d *Daemon) Healthy(now time.Time) bool {
	last := d.lastSuccess.Load()
	return last != 0 && now.Sub(time.Unix(0, last)) <= 3*max(d.opts.Interval, time.Duration(d.period.Load()))
}

// serveMetrics starts the HTTP endpoint; stop shuts it down.
func (d *Daemon) serveMetrics() (stop func(), err error) {
	if d.opts.MetricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", d.opts.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !d.Healthy(time.Now()) {
			http.Error(w, "no successful cycle in the last three intervals", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.Log.Error().Err(err).Msg("metrics endpoint failed")
		}
	}()
	d.Log.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics and /healthz")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
