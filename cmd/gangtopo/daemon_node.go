package main

import (
	"context"
	"fmt"
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
	mapDir, nodeFileDir, topology string
	interval                      time.Duration
	once                          bool
}

func addNodeRoleFlags(cmd *cobra.Command, o *nodeRoleOptions) {
	o.discoverOptions.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.mapDir, "node-map-dir", "", "directory the node map is published to, as <node>.json (shared with the controller)")
	f.StringVar(&o.nodeFileDir, "node-file-dir", "/var/lib/gangtopo/nodes", "directory of node files for the SPANK plugin (its nodefile_dir; \"\" writes none)")
	f.StringVar(&o.topology, "topology", "", "cluster file: adds the node's block, leaf and spine to its node file (re-read every interval)")
	f.DurationVar(&o.interval, "interval", time.Minute, "time between discoveries")
	f.BoolVar(&o.once, "once", false, "discover and publish once, then exit (non-zero if that failed)")
}

func newDaemonCmd() *cobra.Command {
	var role string
	o := nodeRoleOptions{}
	cmd := &cobra.Command{
		Use:   "daemon --role node --node-map-dir DIR [--node-file-dir DIR] [--topology cluster.yaml] [--interval 1m]",
		Short: "Run the gangtopo sidecar: --role node publishes this node's map and its node file for the SPANK plugin",
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
	cfg := nodeagent.Config{
		MapDir: o.mapDir, NodeFileDir: o.nodeFileDir, Interval: o.interval,
		Discover: func() (*discovery.NodeMap, error) { return discovery.Discover(opts...) },
	}
	if o.topology != "" {
		cfg.Domains = func(node string) ([]discovery.NodeFileDomain, error) { return clusterDomains(o.topology, node) }
	}
	a, err := nodeagent.New(cfg, log)
	if err != nil {
		return asUsage(err)
	}
	if o.once {
		return a.Once()
	}
	log.Info().Str("node_map_dir", o.mapDir).Str("node_file_dir", o.nodeFileDir).Dur("interval", o.interval).Msg("node agent started")
	return a.Run(ctx)
}

// clusterDomains reads the cluster file and returns node's domains.
func clusterDomains(path, node string) ([]discovery.NodeFileDomain, error) {
	c, err := loadCluster(path)
	if err != nil {
		return nil, err
	}
	ds, ok := discovery.ClusterDomains(c, node)
	if !ok {
		return nil, fmt.Errorf("node %s is not in %s", node, path)
	}
	return ds, nil
}
