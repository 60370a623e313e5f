package main

import (
	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/nodeagent"
)

// nodeRoleOptions are the flags of `gangtopo daemon --role node`.
//
// This file holds the node role only. The controller role and a shared
// daemon core live on another branch; when they land, newDaemonCmd moves
// there and calls addNodeRoleFlags and runNodeRole for --role node.
type nodeRoleOptions struct {
	discoverOptions
	mapDir, nicFile string
	interval        time.Duration
	once            bool
}

func addNodeRoleFlags(cmd *cobra.Command, o *nodeRoleOptions) {
	o.discoverOptions.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.mapDir, "node-map-dir", "", "directory the node map is published to, as <node>.json (shared with the controller)")
	f.StringVar(&o.nicFile, "nic-file", "/run/gangtopo/nics", "NIC file for the SPANK plugin (\"\" writes none)")
	f.DurationVar(&o.interval, "interval", time.Minute, "time between discoveries")
	f.BoolVar(&o.once, "once", false, "discover and publish once, then exit (non-zero if that failed)")
}

func newDaemonCmd() *cobra.Command {
	var role string
	o := nodeRoleOptions{}
	cmd := &cobra.Command{
		Use:   "daemon --role node --node-map-dir DIR [--nic-file FILE] [--interval 1m]",
		Short: "Run the gangtopo sidecar: --role node publishes this node's map and NIC file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role != "node" {
				return usagef("--role %q: want node (the controller role is not in this build)", role)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log := zerolog.New(cmd.ErrOrStderr()).With().Timestamp().Str("role", "node").Logger()
			return runNodeRole(ctx, o, log)
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "node (discovery on a GPU node)")
	addNodeRoleFlags(cmd, &o)
	return cmd
}

// runNodeRole runs the node agent until ctx ends (or once, with --once).
func runNodeRole(ctx context.Context, o nodeRoleOptions, log zerolog.Logger) error {
	if o.mapDir == "" {
		return usagef("--node-map-dir is required (where the controller reads node maps)")
	}
	if o.interval < time.Second {
		return usagef("--interval %v: want at least 1s", o.interval)
	}
	opts := o.discoverOpts()
	a, err := nodeagent.New(nodeagent.Config{
		MapDir: o.mapDir, NICFile: o.nicFile, Interval: o.interval,
		Discover: func() (*discovery.NodeMap, error) { return discovery.Discover(opts...) },
	}, log)
	if err != nil {
		return asUsage(err)
	}
	if o.once {
		return a.Once()
	}
	log.Info().Str("node_map_dir", o.mapDir).Str("nic_file", o.nicFile).Dur("interval", o.interval).Msg("node agent started")
	return a.Run(ctx)
}
