// Command slurmscale runs the scale lab at one size and writes its figures
// into docs/benchmarks.md (make bench-scale runs it once per size).
//
//	slurmscale run -nodes 256 -backlogs 2000,20000
//	slurmscale render            the section from the saved results alone
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmscale"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: slurmscale run|render [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	nodes := fs.Int("nodes", 256, "nodes in the lab (a multiple of 16)")
	backlogs := fs.String("backlogs", "2000", "backlog sizes measured, jobs (array tasks one by one), comma separated")
	held := fs.Int("held", 200, "held jobs per mode in the throughput phase")
	window := fs.Duration("window", 60*time.Second, "how long each backlog is watched")
	fill := fs.Float64("fill", 0.9, "share of the GPUs the long-running fill occupies")
	batch := fs.Int("batch", 256, "slurmds started at a time")
	maxShare := fs.Float64("max-rpc-share", 0, "the controller's --max-rpc-share, percent (0: off); its figures go to a file of their own")
	root := fs.String("root", os.Getenv("GANGTOPO_SLURM_ROOT"), "a Debian root of a newer Slurm series; empty: the host's")
	plugins := fs.String("plugins", envOr("GANGTOPO_PLUGINS", "build/plugins"), "the plugins built for the series")
	bin := fs.String("bin", envOr("GANGTOPO_BIN", "build/gangtopo"), "the gangtopo binary")
	doc := fs.String("doc", "docs/benchmarks.md", "the document to update")
	results := fs.String("results", "docs/bench/scale", "where each run's figures are kept")
	_ = fs.Parse(os.Args[2:])
	if fs.NArg() > 0 {
		// flag stops at the first argument that is not one: whatever
		// follows it would be silently dropped (SCALE_BACKLOGS="2000
		// 20000" ran with the default plugins and no window)
		fmt.Fprintf(os.Stderr, "slurmscale %s: unexpected argument %q (the flags after it were not read); lists such as -backlogs are comma separated: -backlogs 2000,20000\n", os.Args[1], fs.Arg(0))
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		cfg := slurmscale.Config{Shape: slurmscale.FatTree, Nodes: *nodes, Held: *held, Window: *window, FillFraction: *fill,
			Root: *root, StartBatch: *batch, Seed: uint64(*nodes), MaxRPCShare: *maxShare,
			Logf: func(f string, a ...any) { fmt.Printf(time.Now().Format("15:04:05 ")+f+"\n", a...) }}
		if cfg.Backlogs, err = ints(*backlogs); err == nil {
			err = run(cfg, *plugins, *bin, *doc, *results)
		}
	case "render":
		err = slurmscale.WriteDoc(*doc, *results)
	default:
		err = fmt.Errorf("unknown command %q (want run or render)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slurmscale:", err)
		os.Exit(1)
	}
}

// run measures one size, keeps its figures (also when a check failed:
// what was measured is shown) and renders the document.
func run(cfg slurmscale.Config, plugins, bin, doc, results string) error {
	var err error
	if cfg.Plugins, err = filepath.Abs(plugins); err != nil {
		return err
	}
	if cfg.Bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	r, err := slurmscale.Run(context.Background(), cfg)
	if r == nil {
		return err
	}
	err = errors.Join(err, r.Check())
	path, e := slurmscale.Save(results, r)
	if e != nil {
		return errors.Join(err, e)
	}
	fmt.Println("slurmscale: figures in", path)
	return errors.Join(err, slurmscale.WriteDoc(doc, results))
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-backlogs: %q is not a positive number of jobs", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
