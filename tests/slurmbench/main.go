package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: slurmbench throughput|replay|record|runs|history [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	n := fs.Int("n", 500, "submissions per mode (throughput)")
	runs := fs.String("runs", "plain,pernode,plain_off2,pernode_off2", "reference runs to replay with gangtopo (replay)")
	stock := fs.String("stock", "plain", "reference runs to replay with stock Slurm too, to check the lab against the recording (replay; empty: none)")
	ref := fs.String("ref", "../shared/data/slurm-22.05-reference", "the reference data directory")
	doc := fs.String("doc", "docs/benchmarks.md", "the document to update")
	ctldEnv := fs.String("ctld-env", "", "extra environment for slurmctld, NAME=value,... (e.g. GOMAXPROCS=1)")
	label := fs.String("label", "as built", "the design a throughput run measures, its row in the every-run table (throughput)")
	root := fs.String("root", os.Getenv("GANGTOPO_SLURM_ROOT"), "a Debian root holding the Slurm series to run (make roots: build/roots/sid); empty: the host's own Slurm")
	recorded := fs.String("recorded", "", "the directory of the recorded stock runs to compare with (replay; default -ref: 22.05.8's)")
	out := fs.String("out", "selector/sim/stockslurm/testdata", "where record writes slurm-<release>/ (record); the dump's directory (history)")
	seed := fs.Int64("seed", 1, "the workload's seed (history)")
	_ = fs.Parse(os.Args[2:])
	extraEnv = split(*ctldEnv)
	if *recorded == "" {
		*recorded = *ref
	}
	var err error
	switch os.Args[1] {
	case "throughput":
		err = withLab(*root, true, func(b *bench) error { return b.throughput(*n, *doc, *label) })
	case "runs": // the every-run tables from the runs file alone (after merging two files' rows, say)
		err = renderRuns(*doc)
	case "replay":
		err = withLab(*root, true, func(b *bench) error {
			return b.replayAll(refDirs{seqs: *ref, recorded: *recorded}, split(*runs), split(*stock), *doc)
		})
	case "history":
		err = history(*root, *n, *seed, *out)
	case "record":
		err = record(*root, *ref, split(*runs), *out)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "slurmbench:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// bench is one lab with the gangtopo plugins and the files they read.
type bench struct {
	lab                    *slurmlab.Lab
	plugins                slurmlab.Plugins
	config, snapshot, topo string
	// root is the Debian root whose Slurm the lab runs; empty: the host's
	root string
}

const benchConfig = `version: v1
topology: %s
snapshot: %s
jobs: gpu
default_topology: any:preferred
max_snapshot_age: 30s
reload_interval: 50ms
decision_field: admin_comment
`

// extraEnv is added to slurmctld's environment (-ctld-env).
var extraEnv []string

// withLab starts the 16-node lab on the host's Slurm or on root's, with
// the gangtopo plugins configured (withPlugins) or with nothing of
// gangtopo at all (stock Slurm as the reference recordings ran it), runs f
// and stops the lab.
func withLab(root string, withPlugins bool, f func(*bench) error) error {
	plugins, _ := filepath.Abs(envOr("GANGTOPO_PLUGINS", "build/plugins"))
	dir, err := os.MkdirTemp("", "gangtopo-lab-")
	if err != nil {
		return err
	}
	b := &bench{topo: filepath.Join(dir, "etc", "cluster.yaml"), config: filepath.Join(dir, "etc", "gangtopo.yaml"),
		snapshot: filepath.Join(dir, "state", "snapshot.json"), root: root}
	for _, sub := range []string{"etc", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	data, err := os.ReadFile("docs/examples/lab16.yaml")
	if err != nil {
		return err
	}
	if err := os.WriteFile(b.topo, data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(b.config, []byte(fmt.Sprintf(benchConfig, b.topo, b.snapshot)), 0o644); err != nil {
		return err
	}
	c, err := topology.Parse(strings.NewReader(string(data)), b.topo)
	if err != nil {
		return err
	}
	opts := slurmlab.Options{Dir: dir, RemoveDir: true, Cluster: c, Owner: os.Getpid(), Root: root,
		Logf: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }}
	if withPlugins {
		b.plugins = slurmlab.Plugins{Dir: plugins, JobSubmit: true, Spank: true, CtldEnv: append([]string{"GANGTOPO_CONFIG=" + b.config}, extraEnv...)}
		opts.Plugins, opts.Expose = b.plugins, []string{plugins}
	}
	b.lab, err = slurmlab.Start(context.Background(), opts)
	if err != nil {
		return err
	}
	defer b.lab.Stop()
	return f(b)
}

// setPlugins switches job_submit/gangtopo on or off (scontrol reconfigure).
func (b *bench) setPlugins(on bool) error {
	p := b.plugins
	p.JobSubmit, p.Spank = on, on
	return b.lab.Reconfigure(context.Background(), p)
}

// publish writes the snapshot with `gangtopo snapshot --from-slurm` (what
// the controller daemon does every few seconds) and waits for the plugin
// to re-read it.
func (b *bench) publish() error {
	bin, _ := filepath.Abs(envOr("GANGTOPO_BIN", "build/gangtopo"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "snapshot", "--from-slurm", "--topology", b.topo, "-o", b.snapshot)
	cmd.Env = b.lab.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gangtopo snapshot: %v: %s", err, out)
	}
	time.Sleep(250 * time.Millisecond)
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
