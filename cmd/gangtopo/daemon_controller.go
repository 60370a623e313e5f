package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/controller"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/selector/frag"
)

// controllerRole is `gangtopo daemon --role controller` (see package
// controller).
func controllerRole(shared *daemonFlags) daemonRole {
	var (
		output string
		slurm  slurmFlags
	)
	return daemonRole{
		interval: 5 * time.Second,
		addFlags: func(cmd *cobra.Command) {
			fs := cmd.Flags()
			fs.StringVarP(&output, "output", "o", "", "controller: snapshot `file` to publish")
			slurm.register(fs)
		},
		start: func(d *daemon.Daemon) (func(context.Context) error, error) {
			topology := shared.topology
			if topology == "" || output == "" {
				return nil, usagef("daemon --role controller: --topology and -o are required")
			}
			poll, err := slurm.config()
			if err != nil {
				return nil, err
			}
			c, err := controller.New(controller.Config{
				Topology: topology, Output: output, Poll: poll, FeaturePrefix: slurm.featurePrefix,
				Publish:  publish.Options{AllowInsecureDir: shared.insecureDir},
				Workload: frag.PhillyPrior(1),
			}, d)
			if err != nil {
				return nil, err
			}
			return c.Cycle, nil
		},
	}
}
