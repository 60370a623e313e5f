package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// history runs a job history of n submissions (slurmlab.NewHistory) on a
// lab with accounting, stock Slurm with only the SPANK plugin loaded when
// one is built for the series (so --gang-topology reaches sacct's submit
// line), and dumps it into out (slurmlab.DumpHistory) with a line of
// README.txt saying how it was made.
func history(root string, n int, seed int64, out string) error {
	data, err := os.ReadFile("docs/examples/lab16.yaml")
	if err != nil {
		return err
	}
	c, err := topology.Parse(strings.NewReader(string(data)), "lab16.yaml")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "gangtopo-history-lab-")
	if err != nil {
		return err
	}
	opts := slurmlab.Options{Dir: dir, RemoveDir: true, Cluster: c, Owner: os.Getpid(), Root: root, Accounting: true,
		Logf: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
	plugins, _ := filepath.Abs(envOr("GANGTOPO_PLUGINS", "build/plugins"))
	gang := false
	if _, err := os.Stat(filepath.Join(plugins, "spank_gangtopo.so")); err == nil {
		opts.Plugins, opts.Expose, gang = slurmlab.Plugins{Dir: plugins, Spank: true}, []string{plugins}, true
	}
	t0 := time.Now()
	lab, err := slurmlab.Start(context.Background(), opts)
	if err != nil {
		return err
	}
	defer lab.Stop()
	jobs := slurmlab.NewHistory(n, seed, c.NumGPUs())
	ctx := context.Background()
	started := time.Now()
	start, err := lab.RunHistory(ctx, jobs, slurmlab.HistoryOptions{GangOption: gang, Logf: opts.Logf})
	if err != nil {
		return err
	}
	ran := time.Since(started)
	if err := lab.DumpHistory(ctx, start, out); err != nil {
		return err
	}
	line := fmt.Sprintf("Slurm %s, lab16 (16 nodes x 8 GPUs), slurmbench history -n %d -seed %d: %s; the jobs ran for %v, lab start to dump %v\n",
		lab.Release, n, seed, slurmlab.HistorySummary(jobs, gang), ran.Round(time.Second), time.Since(t0).Round(time.Second))
	fmt.Print(line)
	return os.WriteFile(filepath.Join(out, "MADE.txt"), []byte(line), 0o644)
}
