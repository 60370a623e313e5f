package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/sweep"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/fgd"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
)

type simulateFlags struct {
	traces    string
	workloads string
	policies  string
	seeds     string
	tune      float64
	jobs      int
	output    string
	svg       string
	markdown  string
	heldout   string
	refuse    int
	series    string
	slurm     stockslurm.Series // --slurm-series, looked up
}

func newSimulateCmd() *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Replay the openb traces under placement policies (the FGD paper's protocol)",
		Long: `simulate replays the Alibaba openb GPU traces the way the FGD paper (USENIX ATC'23)
did: pods shuffled with each seed, resampled until their GPU request reaches
--tune x the cluster's capacity, placed one at a time with no queue; a pod
that does not fit fails. It reports the unallocated GPU % and the
fragmentation rate at 100% and 130% of capacity arrived, next to the FGD
authors' published results for the same cells.

The traces are read from --traces, else $GANGTOPO_TRACES, else
../shared/data/traces relative to the checkout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.traces, "traces", "", "trace directory (default $"+traces.EnvDir+", else ../shared/data/traces)")
	fl.StringVarP(&f.workloads, "workloads", "w", "all", "openb pod lists, comma-separated (all: the paper's 17)")
	fl.StringVarP(&f.policies, "policies", "p", "all", "policies, comma-separated (all: "+strings.Join(fgd.Names(), ", ")+")")
	fl.StringVar(&f.seeds, "seeds", "42-51", "seeds: a list and ranges, e.g. 42-51 or 1,7,100-102")
	fl.Float64Var(&f.tune, "tune", fgd.DefaultTune, "arrive pods until their GPU request reaches this multiple of capacity")
	fl.IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "runs in parallel")
	fl.StringVarP(&f.output, "output", "o", "table", outputHelp("table", "json", "csv"))
	fl.StringVar(&f.svg, "svg", "", "also write an SVG plot of unallocated GPU % against arrived workload to this file")
	fl.StringVar(&f.markdown, "markdown", "", "rewrite the simulator section of this benchmarks file (docs/benchmarks.md)")
	fl.StringVar(&f.heldout, "heldout-seeds", "", "with --markdown: also compare FGD, slurm, gangtopo and gangtopo-slurm on these seeds")
	fl.StringVar(&f.series, "slurm-series", stockslurm.DefaultSeries, "the Slurm series the slurm and gangtopo-slurm policies model, named in the report: "+
		stockslurm.SeriesNames()+" (the series whose recorded placements the model was checked against)")
	fl.IntVar(&f.refuse, "refuse-share", 0, "what-if: single-GPU pods asking for exactly this many milli-GPUs fail on arrival under every policy (1-999)")
	return cmd
}

func runSimulate(cmd *cobra.Command, f *simulateFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && isTerminal(f) {
		cfg.Progress = progressBar(f, time.Now())
	}
	sw, err := sweep.Execute(cfg)
	if err != nil {
		return err
	}
	pub, err := sweep.LoadPublished(cfg.TraceDir)
	if err != nil {
		return fmt.Errorf("published FGD results: %w", err)
	}
	cells := sweep.Summary(sw, pub)
	out := cmd.OutOrStdout()
	switch f.output {
	case "csv":
		err = sweep.WriteCSV(out, cells)
	case "json":
		err = writeCSVAsJSON(out, func(w io.Writer) error { return sweep.WriteCSV(w, cells) })
	default:
		if slices.ContainsFunc(cfg.Policies, func(p string) bool { return p == "slurm" || p == "gangtopo-slurm" }) {
			fmt.Fprintf(out, "%s\n\n", f.slurm.Describe())
		}
		err = sweep.WriteTable(out, cells)
		if cfg.RefuseShare != 0 {
			fmt.Fprintf(out, "\nWhat-if: every single-GPU pod of %d milli-GPUs failed on arrival, room or not. This breaks the FGD protocol (a pod that fits is placed), so no published result is shown.\n", cfg.RefuseShare)
		}
		fmt.Fprintf(out, "\n%d runs in %s (%s CPU, %d workers)\n", len(cfg.Workloads)*len(cfg.Policies)*len(cfg.Seeds), sw.Wall.Round(time.Millisecond), sw.CPU.Round(time.Millisecond), cfg.Workers)
	}
	if err != nil {
		return err
	}
	if f.svg != "" {
		if err := writeFile(f.svg, func(w io.Writer) error {
			return sweep.WriteSVG(w, cells, fmt.Sprintf("Unallocated GPU %% vs arrived workload (openb, mean of seeds %s)", f.seeds))
		}); err != nil {
			return err
		}
	}
	if f.markdown != "" {
		return f.writeMarkdown(cmd, cfg, sw, cells, pub)
	}
	return nil
}

// writeMarkdown adds what only the benchmarks document shows (held-out
// seeds, single-run timings) and rewrites its simulator section.
func (f *simulateFlags) writeMarkdown(cmd *cobra.Command, cfg sweep.Config, sw *sweep.Sweep, cells []sweep.Cell, pub []traces.Published3) error {
	r := &sweep.Report{Command: "gangtopo simulate " + strings.Join(commandArgs(cmd), " "), Main: sw, Cells: cells, Pub: pub,
		Slurm: f.slurm}
	if f.svg != "" {
		if rel, err := filepath.Rel(filepath.Dir(f.markdown), f.svg); err == nil {
			r.SVG = rel
		}
	}
	if f.heldout != "" {
		seeds, err := parseSeeds(f.heldout)
		if err != nil {
			return usagef("--heldout-seeds %q: %v", f.heldout, err)
		}
		h := cfg
		h.Seeds, h.Policies, h.Progress = seeds, []string{"FGD", "slurm", "gangtopo", "gangtopo-slurm"}, nil
		if r.HeldOut, err = sweep.Execute(h); err != nil {
			return err
		}
	}
	w := cfg
	w.Workloads, w.Policies, w.RefuseShare, w.Progress = []string{whatIfWorkload}, []string{"gangtopo"}, whatIfShare, nil
	var err error
	if r.WhatIf, err = sweep.Execute(w); err != nil {
		return err
	}
	if r.OneRun, err = sweep.OneRunTimes(cfg.TraceDir, cfg.Policies, cfg.Tune, 3); err != nil {
		return err
	}
	return sweep.UpdateMarkdown(f.markdown, r)
}

// The what-if of the benchmarks document: gangtopo on the default
// workload with its most common fractional share refused. 1,078 of its
// 8,152 pods ask for 810 milli-GPUs, and the 190 milli each leaves fits
// only the 106 pods of 160 milli or less: the remnants are most of the
// idle capacity at the end, under every policy.
const (
	whatIfWorkload = "default"
	whatIfShare    = 810
)

// commandArgs returns the flags the command was given, for quoting.
func commandArgs(cmd *cobra.Command) []string {
	var out []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		out = append(out, "--"+fl.Name+" "+fl.Value.String())
	})
	return out
}

// config checks the flags and turns them into a sweep configuration.
func (f *simulateFlags) config() (sweep.Config, error) {
	cfg := sweep.Config{Tune: f.tune, Workers: f.jobs}
	var err error
	if err := checkOutput(f.output, "table", "json", "csv"); err != nil {
		return cfg, err
	}
	// the files come last, after minutes of runs: find out now whether
	// they can be written
	if err := checkWritable("--svg", f.svg); err != nil {
		return cfg, err
	}
	if err := checkWritable("--markdown", f.markdown); err != nil {
		return cfg, err
	}
	if f.jobs < 1 {
		return cfg, usagef("--jobs %d: want at least 1", f.jobs)
	}
	if f.slurm, err = stockslurm.LookupSeries(f.series); err != nil {
		return cfg, usagef("--slurm-series: %v", err)
	}
	if f.refuse < 0 || f.refuse >= 1000 {
		return cfg, usagef("--refuse-share %d: want a share of one GPU in milli-GPUs, 1 to 999 (0: refuse nothing)", f.refuse)
	}
	if f.refuse != 0 && f.markdown != "" {
		return cfg, usagef("--refuse-share with --markdown: the benchmarks document holds the protocol's results; run the what-if on its own")
	}
	cfg.RefuseShare = f.refuse
	if f.tune <= 0 {
		return cfg, usagef("--tune %g: want a positive ratio (the paper uses 1.3)", f.tune)
	}
	if cfg.Seeds, err = parseSeeds(f.seeds); err != nil {
		return cfg, usagef("--seeds %q: %v", f.seeds, err)
	}
	if cfg.Policies, err = parsePolicies(f.policies); err != nil {
		return cfg, usagef("--policies: %v", err)
	}
	if cfg.TraceDir, err = traces.Dir(f.traces); err != nil {
		return cfg, asUsage(err)
	}
	if cfg.Workloads, err = parseWorkloads(f.workloads, cfg.TraceDir); err != nil {
		return cfg, usagef("--workloads: %v", err)
	}
	return cfg, nil
}

func parsePolicies(s string) ([]string, error) {
	if s == "all" {
		return fgd.Names(), nil
	}
	var out []string
	for _, p := range request.SplitList(s) {
		if _, err := fgd.Lookup(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policies given")
	}
	return out, nil
}

func parseWorkloads(s, dir string) ([]string, error) {
	if s == "all" {
		return traces.OpenbWorkloads, nil
	}
	var out []string
	for _, w := range request.SplitList(s) {
		w = strings.TrimSuffix(strings.TrimPrefix(w, "openb_pod_list_"), ".csv")
		if _, err := os.Stat(filepath.Join(dir, traces.OpenbPods(w))); err != nil {
			return nil, fmt.Errorf("workload %q: %v (the paper's workloads are %s)", w, err, strings.Join(traces.OpenbWorkloads, ", "))
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no workloads given")
	}
	return out, nil
}

// parseSeeds reads "42-51" or "1,7,100-102".
func parseSeeds(s string) ([]int64, error) {
	var out []int64
	for _, part := range request.SplitList(s) {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(hi, 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range of seeds (want low-high)", part)
			}
		}
		if b-a >= 100000 {
			return nil, fmt.Errorf("%q: too many seeds", part)
		}
		for x := a; x <= b; x++ {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no seeds given")
	}
	return out, nil
}
