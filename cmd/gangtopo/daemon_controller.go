package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/controller"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/selector/frag"
)

// controllerRole is `gangtopo daemon --role controller` (see package
// controller).
func controllerRole() daemonRole {
	var (
		topology, output string
		insecureDir      bool
		slurm            slurmFlags
	)
	return daemonRole{
		addFlags: func(fs *pflag.FlagSet) {
			fs.StringVar(&topology, "topology", "", "controller: cluster `file` (YAML, version v1); re-read when it changes")
			fs.StringVarP(&output, "output", "o", "", "controller: snapshot `file` to publish")
			fs.BoolVar(&insecureDir, "allow-insecure-dir", false, "publish even into a directory others can write")
			slurm.register(fs)
		},
		start: func(d *daemon.Daemon) (func(context.Context) error, error) {
			if topology == "" || output == "" {
				return nil, usagef("daemon --role controller: --topology and -o are required")
			}
			poll, err := slurm.config()
			if err != nil {
				return nil, err
			}
			c, err := controller.New(controller.Config{
				Topology: topology, Output: output, Poll: poll,
				Publish:  publish.Options{AllowInsecureDir: insecureDir},
				Workload: frag.PhillyPrior(1),
			}, d)
			if err != nil {
				return nil, err
			}
			return c.Cycle, nil
		},
	}
}
