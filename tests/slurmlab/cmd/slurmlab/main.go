package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
	root := fs.String("root", "", "a Debian root with a newer Slurm series (make roots: build/roots/trixie, build/roots/sid); empty: the host's Slurm")
	topoPlugin := fs.String("topology-plugin", "tree", "Slurm's topology plugin: tree or block (23.11+)")
	topoConf := fs.String("topology-conf", "", "topology.conf to use (e.g. from gangtopo gen topology --plugin block); empty: the lab's own tree")
	topoYAML := fs.String("topology-yaml", "", "topology.yaml to use as well (Slurm 25.05+ reads it instead of topology.conf)")
	accounting := fs.Bool("accounting", false, "run slurmdbd over a private MariaDB with the lab (QOS, limits, preempt/qos)")
	batch := fs.Int("start-batch", 0, "start the slurmds this many at a time, each batch registered before the next (0: all at once)")
	maxJobs := fs.Int("max-job-count", 0, "slurm.conf's MaxJobCount (0: Slurm's default, 10,000)")
	maxArray := fs.Int("max-array-size", 0, "slurm.conf's MaxArraySize (0: Slurm's default, 1,001)")
	var lines confLines
	fs.Var(&lines, "conf", "a line added to slurm.conf (repeatable), e.g. --conf PreemptType=preempt/qos")
	_ = fs.Parse(os.Args[2:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "slurmlab: --dir is required")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		opts := slurmlab.Options{Dir: *dir, CtldPort: *port, Accounting: *accounting, Extra: lines, Root: *root,
			Topology: slurmlab.Topology{Plugin: *topoPlugin}, StartBatch: *batch, MaxJobCount: *maxJobs, MaxArraySize: *maxArray}
		if *topoConf != "" {
			if opts.Topology.Conf, err = os.ReadFile(*topoConf); err != nil {
				break
			}
		}
		if *topoYAML != "" {
			if opts.Topology.YAML, err = os.ReadFile(*topoYAML); err != nil {
				break
			}
		}
		err = up(opts, *topo, *plugins, *config)
	case "down":
		err = slurmlab.StopDir(*dir)
	default:
		err = fmt.Errorf("unknown command %q (want up or down)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slurmlab:", err)
		os.Exit(1)
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

// confLines is a repeatable flag.
type confLines []string

func (c *confLines) String() string     { return fmt.Sprint([]string(*c)) }
func (c *confLines) Set(v string) error { *c = append(*c, v); return nil }

func up(opts slurmlab.Options, topo, plugins, config string) error {
	c, err := parseTopology(topo)
	if err != nil {
		return err
	}
	opts.Cluster, opts.ClusterFile = c, topo
	opts.Logf = func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	if plugins != "" {
		abs, err := filepath.Abs(plugins)
		if err != nil {
			return err
		}
		opts.Plugins = slurmlab.Plugins{Dir: abs, JobSubmit: true, Spank: true}
		opts.Expose = []string{abs}
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
