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
		fmt.Fprintln(os.Stderr, "usage: slurmbench throughput|replay|runs [flags]")
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
	_ = fs.Parse(os.Args[2:])
	extraEnv = split(*ctldEnv)
	var err error
	switch os.Args[1] {
	case "throughput":
		err = withLab(func(b *bench) error { return b.throughput(*n, *doc, *label) })
	case "runs": // the every-run table from the runs file alone (after merging two files' rows, say)
		err = renderRuns(*doc)
	case "replay":
		err = withLab(func(b *bench) error { return b.replayAll(*ref, split(*runs), split(*stock), *doc) })
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

func withLab(f func(*bench) error) error {
	plugins, _ := filepath.Abs(envOr("GANGTOPO_PLUGINS", "build/plugins"))
	dir, err := os.MkdirTemp("", "gangtopo-lab-")
	if err != nil {
		return err
	}
	b := &bench{topo: filepath.Join(dir, "etc", "cluster.yaml"), config: filepath.Join(dir, "etc", "gangtopo.yaml"),
		snapshot: filepath.Join(dir, "state", "snapshot.json")}
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
	b.plugins = slurmlab.Plugins{Dir: plugins, JobSubmit: true, Spank: true, CtldEnv: append([]string{"GANGTOPO_CONFIG=" + b.config}, extraEnv...)}
	b.lab, err = slurmlab.Start(context.Background(), slurmlab.Options{Dir: dir, RemoveDir: true, Cluster: c, Owner: os.Getpid(),
		Plugins: b.plugins, Logf: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
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
