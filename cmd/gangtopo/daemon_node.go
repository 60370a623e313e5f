package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/nodeagent"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// nodeRole is `gangtopo daemon --role node`: discovery on a GPU node,
// publishing the node map and the SPANK plugin's node file every interval
// (default 1m). The shared flags (--topology, --interval, --once, logs,
// metrics) are the daemon core's; the loop runs the agent's Once.
func nodeRole(shared *daemonFlags) daemonRole {
	o := discoverOptions{}
	var mapDir, nodeFileDir string
	return daemonRole{
		interval: time.Minute,
		addFlags: func(cmd *cobra.Command) {
			o.addFlags(cmd)
			f := cmd.Flags()
			f.StringVar(&mapDir, "node-map-dir", "", "node: `directory` the node map is published to as <node>.json, for gangtopo topology build (optional; its failure does not stop the node file)")
			f.StringVar(&nodeFileDir, "node-file-dir", "/var/lib/gangtopo/nodes", "node: local directory of the node file for the SPANK plugin (its nodefile_dir; \"\" writes none)")
		},
		start: func(d *daemon.Daemon) (roleRun, error) {
			if mapDir == "" && nodeFileDir == "" {
				return roleRun{}, usagef("daemon --role node: nothing to publish: --node-file-dir is empty and no --node-map-dir given")
			}
			if d.Interval() < time.Second {
				return roleRun{}, usagef("daemon --role node: --interval %v: want at least 1s", d.Interval())
			}
			opts := o.discoverOpts()
			cfg := nodeagent.Config{
				MapDir: mapDir, NodeFileDir: nodeFileDir, Interval: d.Interval(),
				Publish:  publish.Options{AllowInsecureDir: shared.insecureDir},
				Discover: func() (*discovery.NodeMap, error) { return discovery.Discover(opts...) },
			}
			if topo := shared.topology; topo != "" {
				cfg.Domains = func(node string) ([]nodefile.Domain, error) { return clusterDomains(topo, node) }
			}
			a, err := nodeagent.New(cfg, d.Log)
			if err != nil {
				return roleRun{}, err
			}
			return roleRun{cycle: func(context.Context) error { return a.Once() }}, nil
		},
	}
}

// clusterDomains reads the cluster file and returns node's domains.
func clusterDomains(path, node string) ([]nodefile.Domain, error) {
	c, err := loadCluster(path)
	if err != nil {
		return nil, err
	}
	ds, ok := nodefile.DomainsOf(c, node)
	if !ok {
		return nil, fmt.Errorf("node %s is not in %s", node, path)
	}
	return ds, nil
}
