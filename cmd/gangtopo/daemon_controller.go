package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/controller"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// controllerRole is `gangtopo daemon --role controller` (see package
// controller).
func controllerRole(shared *daemonFlags) daemonRole {
	var (
		output, config string
		slurm          slurmFlags
		maxRPCShare    float64
		wakeSocket     string
	)
	return daemonRole{
		interval: 5 * time.Second,
		addFlags: func(cmd *cobra.Command) {
			fs := cmd.Flags()
			fs.StringVarP(&output, "output", "o", "", "controller: snapshot `file` to publish")
			fs.StringVar(&config, "config", "", "controller: the plugin's gangtopo.yaml, whose policy and rebind: section the re-binding of stale pending jobs follows (default: $GANGTOPO_CONFIG, else "+ctld.DefaultConfigPath+" when it exists; without one, no re-binding)")
			fs.Float64Var(&maxRPCShare, "max-rpc-share", 0, "controller: space the cycles out (up to half the plugin's max_snapshot_age) to keep the controller's share of slurmctld's RPC time, read from sdiag, under this `percent` (0: off; see docs/controller.md)")
			fs.StringVar(&wakeSocket, "wake-socket", "", "controller: serve wakes on this Unix `socket` (mode 0600): gangtopo wake, run by slurm.conf's EpilogSlurmctld, asks for a cycle at once when a gang ends, so that one requeued after a node failure is re-bound before Slurm may start it (needs --config; docs/admin.md)")
			slurm.register(fs)
		},
		start: func(d *daemon.Daemon) (roleRun, error) {
			topology := shared.topology
			if topology == "" || output == "" {
				return roleRun{}, usagef("daemon --role controller: --topology and -o are required")
			}
			poll, err := slurm.config()
			if err != nil {
				return roleRun{}, err
			}
			if !d.Once() {
				// a job listing that outlasts a third of the interval
				// no longer holds the snapshot up (slurmstate's jobsbehind.go)
				poll.JobsWait = d.Interval() / 3
			}
			rebind, err := rebindSetup(config, slurm, d)
			if err != nil {
				return roleRun{}, err
			}
			prefix := slurm.featurePrefix
			if rebind != nil && !slurm.fs.Changed("feature-prefix") {
				prefix = rebind.Config.FeaturePrefix
			}
			// the plugin ignores a snapshot older than its max_snapshot_age
			fresh := ctld.Defaults().MaxSnapshotAge
			if rebind != nil {
				fresh = rebind.Config.MaxSnapshotAge
			}
			d.KeepFresh(fresh)
			share, err := rpcShareSetup(maxRPCShare, d, fresh)
			if err != nil {
				return roleRun{}, err
			}
			c, err := controller.New(controller.Config{
				Topology: topology, Output: output, Poll: poll, FeaturePrefix: prefix,
				Publish:  publish.Options{AllowInsecureDir: shared.insecureDir},
				Workload: frag.PhillyPrior(1), Rebind: rebind, Defrag: defragSetup(rebind, slurm),
				Quota: quotaSetup(rebind, slurm), Actions: actionsSetup(slurm), RPCShare: share, AsyncDuties: !d.Once(),
				Wake: wakeSetup(wakeSocket, d),
			}, d)
			if err != nil {
				return roleRun{}, err
			}
			return roleRun{cycle: c.Cycle, withdraw: c.Withdraw}, nil
		},
	}
}

// wakeSetup is --wake-socket: nil when off, or with --once (one cycle,
// nothing to wake). A woken cycle's duties are waited for up to three
// intervals, at least 10 s.
func wakeSetup(path string, d *daemon.Daemon) *controller.WakeSetup {
	if path == "" || d.Once() {
		return nil
	}
	return &controller.WakeSetup{Path: path, Wake: d.Wake, Timeout: max(3*d.Interval(), 10*time.Second)}
}

// rebindSetup reads gangtopo.yaml for the re-binding: the file --config
// names (which must load), else the plugin's default when it exists (nil
// without one, and a log line saying so).
func rebindSetup(config string, slurm slurmFlags, d *daemon.Daemon) (*controller.RebindSetup, error) {
	path, explicit := config, config != ""
	if !explicit {
		path = ctld.DefaultConfigPath
		if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
			path = env
		}
	}
	cfg, err := ctld.LoadConfig(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && !explicit:
		d.Log.Info().Str("config", path).Msg("no gangtopo.yaml: stale pending jobs are not re-bound (give --config)")
		return nil, nil
	case err != nil:
		return nil, usagef("daemon --role controller: --config: %v", err)
	}
	return &controller.RebindSetup{ConfigPath: path, Config: cfg}, nil
}

// actionsSetup is how the controller's changes reach Slurm: every one
// through the door (actuate), which asks `scontrol ping` which controller
// is in control and `scontrol show config` whether slurm.conf still
// lists the plugin.
func actionsSetup(slurm slurmFlags) *controller.ActionsSetup {
	read := func(args ...string) func(ctx context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			return slurmstate.Command(ctx, slurm.binDir, 10*time.Second, "scontrol", args...)
		}
	}
	return &controller.ActionsSetup{Run: actuate.SlurmRunner(slurm.binDir), Ping: read("ping"), ShowConfig: read("show", "config")}
}

// defragSetup turns the defragmentation duties on with the same
// gangtopo.yaml as the re-binding (nil without one); what they do is the
// file's defrag: section's to say (nothing by default).
func defragSetup(rebind *controller.RebindSetup, slurm slurmFlags) *controller.DefragSetup {
	if rebind == nil {
		return nil
	}
	sc := defragrun.Clients{BinDir: slurm.binDir, Timeout: rebind.Config.Defrag.Timeout}
	return &controller.DefragSetup{ConfigPath: rebind.ConfigPath, Config: rebind.Config, Slurm: sc, Preemption: sc.ReadPreemption}
}

// quotaSetup turns the quota duty on with the same gangtopo.yaml (nil
// without one); it acts only while the file's quota: section names shares.
// It reads Slurm's accounting with sacctmgr and slurm.conf with `scontrol
// show config`; its changes go through the door.
func quotaSetup(rebind *controller.RebindSetup, slurm slurmFlags) *controller.QuotaSetup {
	if rebind == nil {
		return nil
	}
	timeout := rebind.Config.Quota.Timeout
	showConfig := func(ctx context.Context) (string, error) {
		return slurmstate.Command(ctx, slurm.binDir, timeout, "scontrol", "show", "config")
	}
	return &controller.QuotaSetup{ConfigPath: rebind.ConfigPath, Config: rebind.Config,
		Sacctmgr: quotaexec.Sacctmgr{BinDir: slurm.binDir, Timeout: timeout}, ShowConfig: showConfig}
}

// rpcShareSetup checks --max-rpc-share: nil when off (0, or --once, which
// runs one cycle). The longest period is half the plugin's
// max_snapshot_age (fresh): a snapshot must not expire between cycles.
func rpcShareSetup(percent float64, d *daemon.Daemon, fresh time.Duration) (*controller.RPCShareSetup, error) {
	switch {
	case percent < 0 || percent >= 100 || percent != percent:
		return nil, usagef("--max-rpc-share: %v is not a percentage above 0 and below 100 (0: off)", percent)
	case percent == 0 || d.Once():
		return nil, nil
	}
	longest := fresh / 2
	if longest <= d.Interval() {
		d.Log.Warn().Dur("interval", d.Interval()).Dur("max_snapshot_age", fresh).Msg("--max-rpc-share: the plugin's max_snapshot_age leaves no room to space the cycles out beyond the interval; the share is only measured")
	}
	return &controller.RPCShareSetup{Max: percent / 100, Interval: d.Interval(), Longest: longest}, nil
}
