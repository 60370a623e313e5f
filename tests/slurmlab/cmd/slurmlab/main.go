// Command slurmlab starts and stops the local Slurm lab of tests/slurmlab
// outside a test: make demo, make demo-stop and make bench-slurm use it.
//
//	slurmlab up       --dir DIR [--topology FILE] [--port N] [--plugins DIR --config FILE]
//	slurmlab down     --dir DIR
//	slurmlab snapshot --dir DIR [--topology FILE] --out FILE [--every 2s]
//
// up returns once every node is idle and leaves the daemons running; down
// stops them by the PIDs recorded in DIR/run/pids. snapshot writes the
// lab's occupancy snapshot (once, or every --every until killed): test
// scaffolding standing in for `gangtopo snapshot --from-slurm` and the
// sidecar daemon until they exist.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: slurmlab up|down --dir DIR [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "lab directory (required)")
	topo := fs.String("topology", "docs/examples/lab16.yaml", "cluster file to emulate")
	port := fs.Int("port", 16817, "slurmctld port; slurmd ports follow it")
	plugins := fs.String("plugins", "", "directory with job_submit_gangtopo.so and spank_gangtopo.so (empty: stock Slurm)")
	config := fs.String("config", "", "gangtopo.yaml for the job_submit plugin (with --plugins)")
	out := fs.String("out", "", "snapshot file to write (snapshot)")
	every := fs.Duration("every", 0, "rewrite the snapshot at this interval until killed (snapshot)")
	_ = fs.Parse(os.Args[2:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "slurmlab: --dir is required")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(*dir, *topo, *port, *plugins, *config)
	case "down":
		err = slurmlab.StopDir(*dir)
	case "snapshot":
		err = snapshot(*dir, *topo, *out, *every)
	default:
		err = fmt.Errorf("unknown command %q (want up, down or snapshot)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slurmlab:", err)
		os.Exit(1)
	}
}

func snapshot(dir, topo, out string, every time.Duration) error {
	if out == "" {
		return fmt.Errorf("--out is required")
	}
	c, err := parseTopology(topo)
	if err != nil {
		return err
	}
	l := slurmlab.Attach(dir, c)
	for gen := uint64(time.Now().Unix()); ; gen++ {
		if err := l.WriteSnapshot(context.Background(), out, gen); err != nil {
			return err
		}
		if every <= 0 {
			return nil
		}
		time.Sleep(every)
	}
}

func parseTopology(topo string) (*topology.Cluster, error) {
	f, err := os.Open(topo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return topology.Parse(f, topo)
}

func up(dir, topo string, port int, plugins, config string) error {
	c, err := parseTopology(topo)
	if err != nil {
		return err
	}
	opts := slurmlab.Options{Dir: dir, Cluster: c, ClusterFile: topo, CtldPort: port,
		Logf: func(format string, args ...any) { fmt.Printf(format+"\n", args...) }}
	if plugins != "" {
		abs, err := filepath.Abs(plugins)
		if err != nil {
			return err
		}
		opts.Plugins = slurmlab.Plugins{Dir: abs, JobSubmit: true, Spank: true}
		if config != "" {
			cfg, err := filepath.Abs(config)
			if err != nil {
				return err
			}
			opts.Plugins.CtldEnv = []string{"GANGTOPO_CONFIG=" + cfg}
		}
	}
	_, err = slurmlab.Start(context.Background(), opts)
	return err
}
