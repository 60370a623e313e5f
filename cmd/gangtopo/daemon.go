package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
)

// daemonRole is one role of `gangtopo daemon`. addFlags registers the
// role's own flags; start builds the role on the shared core (logger,
// metrics registry, interval) and returns what the core's loop runs.
// Errors from start are the user's to fix (bad flags, unreadable files).
type daemonRole struct {
	interval time.Duration // default --interval
	addFlags func(cmd *cobra.Command)
	start    func(d *daemon.Daemon) (roleRun, error)
}

// roleRun is a started role: the cycle the loop runs, and what the role
// puts back before it stops for good (nil: it holds nothing), with the
// reason; it returns what it could not put back.
type roleRun struct {
	cycle    func(context.Context) error
	withdraw func(ctx context.Context, why string) (left []string)
}

// daemonFlags are the flags every role shares.
type daemonFlags struct {
	opts        daemon.Options
	topology    string // the cluster file
	insecureDir bool   // publish into directories others could write
}

// daemonRoles lists the roles; a new role adds one line here and its own
// daemon_<role>.go.
func daemonRoles(shared *daemonFlags) map[string]daemonRole {
	return map[string]daemonRole{
		"controller": controllerRole(shared),
		"node":       nodeRole(shared),
	}
}

func newDaemonCmd() *cobra.Command {
	shared := &daemonFlags{opts: daemon.Options{Version: version}}
	roles := daemonRoles(shared)
	names := make([]string, 0, len(roles))
	for name := range roles {
		names = append(names, name)
	}
	sort.Strings(names)
	cmd := &cobra.Command{
		Use:   "daemon --role " + strings.Join(names, "|") + " [flags]",
		Short: "Run the sidecar daemon: the occupancy snapshot (controller) or the node's map (node)",
		Long: `Runs one role of the sidecar daemon until SIGINT or SIGTERM.

  controller  polls Slurm every --interval (sinfo/squeue --json, or scontrol), builds the
              occupancy snapshot of the --topology nodes and publishes it atomically to -o,
              where the job_submit plugin reads it. A failing, hanging or garbled Slurm
              command keeps the last good snapshot; the failure is logged and counted.
  node        discovers this node's GPUs, NVLink/PCIe topology and NICs every --interval and
              publishes its node map to --node-map-dir and its node file for the SPANK plugin.

Logs are structured (zerolog) on standard error; metrics are served on --metrics-addr at
/metrics (Prometheus) with /healthz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDaemon(cmd, shared, roles, names)
		},
	}
	f := cmd.Flags()
	f.StringVar(&shared.opts.Role, "role", "", "what this daemon does: "+strings.Join(names, " or "))
	f.StringVar(&shared.topology, "topology", "", "cluster `file` (YAML, version v1): the controller's topology, re-read when it changes; on a node, adds the node's block, leaf and spine to its node file")
	f.DurationVar(&shared.opts.Interval, "interval", 0, "time between cycles (default 5s for the controller, 1m for a node)")
	f.StringVar(&shared.opts.MetricsAddr, "metrics-addr", "", "serve /metrics and /healthz on this `host:port` (e.g. :9464); none if empty")
	f.StringVar(&shared.opts.LogFormat, "log-format", "json", "log format: json or console")
	f.StringVar(&shared.opts.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.BoolVar(&shared.opts.Once, "once", false, "run one cycle and exit (status 1 if it failed)")
	f.BoolVar(&shared.insecureDir, "allow-insecure-dir", false, "publish even into a directory others can write (others could then replace what the plugins read)")
	for _, name := range names {
		roles[name].addFlags(cmd)
	}
	return cmd
}

func runDaemon(cmd *cobra.Command, shared *daemonFlags, roles map[string]daemonRole, names []string) error {
	role, ok := roles[shared.opts.Role]
	if !ok {
		return usagef("daemon: --role %q: want one of %s", shared.opts.Role, strings.Join(names, ", "))
	}
	if !cmd.Flags().Changed("interval") {
		shared.opts.Interval = role.interval
	}
	restartedFrom := os.Getenv(restartedFromEnv)
	os.Unsetenv(restartedFromEnv) // not for the Slurm commands it runs
	if !shared.opts.Once {
		shared.opts.Binary = ownBinary(cmd)
	}
	d, err := daemon.New(shared.opts, cmd.ErrOrStderr())
	if err != nil {
		return asUsage(err)
	}
	if restartedFrom != "" {
		d.Log.Info().Str("from", restartedFrom).Str("version", version).Msg("restarted on the new binary")
	}
	run, err := role.start(d)
	if err != nil {
		return asUsage(err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = d.Run(ctx, run.cycle)
	var gone *daemon.BinaryGone
	switch {
	case !errors.As(err, &gone):
		return err
	case gone.Replaced:
		return restartOn(d, gone)
	}
	stopForGood(d, run, gone)
	return nil
}

// ownBinary is the file the daemon watches (daemon.OwnBinary); nil, with
// a warning, where it cannot be found.
func ownBinary(cmd *cobra.Command) *daemon.Binary {
	bin, err := daemon.OwnBinary()
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "gangtopo: daemon: %v; an upgrade or removal of the package goes unnoticed until the daemon is restarted\n", err)
	}
	return bin
}

// restartedFromEnv carries the version a daemon restarted from into the
// new binary's process, for its first log line.
const restartedFromEnv = "GANGTOPO_RESTARTED_FROM"

// restartOn runs the new binary in place of this process (exec: the same
// PID, arguments and environment), so that whatever started the daemon,
// systemd or an admin, still has it, now as the version installed. The
// loop has stopped and its metrics endpoint is closed, for the new
// process to listen on. It returns only when the exec fails.
func restartOn(d *daemon.Daemon, gone *daemon.BinaryGone) error {
	d.Log.Warn().Str("binary", gone.Path).Str("version", version).Msg(gone.Error() + ": restarting on it")
	env := append(os.Environ(), restartedFromEnv+"="+version)
	err := syscall.Exec(gone.Path, os.Args, env)
	return fmt.Errorf("daemon: restarting on the new %s: %w", gone.Path, err)
}

// withdrawTimeout bounds what a daemon stopping for good does in Slurm,
// below systemd's default stop timeout (90 s).
const withdrawTimeout = time.Minute

// stopForGood is the end of a daemon whose binary was removed: it says so,
// has the role put back what it holds, and says what is left. The process
// then exits with status 0, which systemd's Restart=on-failure leaves be.
func stopForGood(d *daemon.Daemon, run roleRun, gone *daemon.BinaryGone) {
	why := gone.Error()
	if run.withdraw == nil {
		d.Log.Error().Str("binary", gone.Path).Msg(why + ": this daemon stops for good")
		return
	}
	d.Log.Error().Str("binary", gone.Path).Msg(why + ": this daemon stops for good, after putting back what it holds in Slurm")
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	if left := run.withdraw(ctx, why); len(left) > 0 {
		d.Log.Error().Strs("left", left).Msg("stopped for good; left in Slurm, to be put back by hand: " + strings.Join(left, "; "))
		return
	}
	d.Log.Warn().Msg("stopped for good; nothing gangtopo held is left in Slurm")
}
