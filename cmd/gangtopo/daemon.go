package main

import (
	"context"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
)

// daemonRole is one role of `gangtopo daemon`. addFlags registers the
// role's own flags; start builds the role on the shared core (logger,
// metrics registry) and returns the cycle the core's loop runs. Errors from
// start are the user's to fix (bad flags, unreadable files).
type daemonRole struct {
	addFlags func(fs *pflag.FlagSet)
	start    func(d *daemon.Daemon) (cycle func(context.Context) error, err error)
}

// daemonRoles lists the roles; a new role adds one line here and its own
// daemon_<role>.go.
func daemonRoles() map[string]daemonRole {
	return map[string]daemonRole{
		"controller": controllerRole(),
	}
}

func newDaemonCmd() *cobra.Command {
	opts := daemon.Options{Version: version}
	roles := daemonRoles()
	names := make([]string, 0, len(roles))
	for name := range roles {
		names = append(names, name)
	}
	sort.Strings(names)
	cmd := &cobra.Command{
		Use:   "daemon --role " + strings.Join(names, "|") + " [flags]",
		Short: "Run the sidecar daemon: keep the occupancy snapshot (controller) current",
		Long: `Runs one role of the sidecar daemon until SIGINT or SIGTERM.

  controller  polls Slurm every --interval (sinfo/squeue --json, or scontrol), builds the
              occupancy snapshot of the --topology nodes and publishes it atomically to -o,
              where the job_submit plugin reads it. A failing, hanging or garbled Slurm
              command keeps the last good snapshot; the failure is logged and counted.

Logs are structured (zerolog) on standard error; metrics are served on --metrics-addr at
/metrics (Prometheus) with /healthz.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			role, ok := roles[opts.Role]
			if !ok {
				return usagef("daemon: --role %q: want one of %s", opts.Role, strings.Join(names, ", "))
			}
			d, err := daemon.New(opts, cmd.ErrOrStderr())
			if err != nil {
				return asUsage(err)
			}
			cycle, err := role.start(d)
			if err != nil {
				return asUsage(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx, cycle)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Role, "role", "", "what this daemon does: "+strings.Join(names, " or "))
	f.DurationVar(&opts.Interval, "interval", 5*time.Second, "time between cycles")
	f.StringVar(&opts.MetricsAddr, "metrics-addr", "", "serve /metrics and /healthz on this `host:port` (e.g. :9464); none if empty")
	f.StringVar(&opts.LogFormat, "log-format", "json", "log format: json or console")
	f.StringVar(&opts.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.BoolVar(&opts.Once, "once", false, "run one cycle and exit (status 1 if it failed)")
	for _, name := range names {
		roles[name].addFlags(f)
	}
	return cmd
}
