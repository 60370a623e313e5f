package slurmscale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// A run is one lab at one size, measured in phases, all in one slurmctld so
// that every ratio is read within a run:
//
//  1. start: the lab (slurmds in batches), the controller daemon beside it.
//  2. throughput: held jobs submitted with the plugins and without, in
//     alternating batches on the empty cluster (throughput.go).
//  3. fill: long jobs that occupy FillFraction of the GPUs (so that the
//     backlog waits and backfill has work).
//  4. windows: for each backlog size, the backlog submitted with the
//     plugins and measured, cancelled, then the same without (window.go).
//
// Plugins off means nothing of gangtopo in slurm.conf (job_submit and
// SPANK out, `scontrol reconfigure`) and the controller stopped, started
// again when they are back: Slurm as a site without gangtopo runs it. (It
// was paused with SIGSTOP once: a poll command running across the pause
// was killed at the resume by its timeout, and the daemon backed off for
// twice the pause, longer than the run waits for its snapshot.)

// Config is one run.
type Config struct {
	Shape Shape
	Nodes int
	// Backlogs are the backlog sizes measured (jobs, array tasks one by
	// one), each with the plugins and without.
	Backlogs []int
	// Held is the throughput phase's held jobs per mode.
	Held int
	// Window is how long each backlog is watched; FillFraction the GPUs
	// the fill occupies.
	Window       time.Duration
	FillFraction float64
	// Root is a Debian root of a newer Slurm series ("" the host's);
	// Plugins the plugins built for it; Bin the gangtopo binary.
	Root, Plugins, Bin string
	StartBatch         int
	Seed               uint64
	// MaxRPCShare is the controller's --max-rpc-share, percent (0: off).
	MaxRPCShare float64
	Logf        func(format string, args ...any)
}

// scaleConfig is the lab's gangtopo.yaml: every GPU job of partition gpu
// goes through the engine; the controller leads alone and audits; every
// duty that needs no accounting is on (re-binding by default,
// defragmentation's policy for gangs of 16 GPUs and more).
// max_snapshot_age is the plugin's default (runs before 2026-12-06 used
// 30 s, which the 1,024-node 26.05.5 run's slow polls outlasted: its
// table's plugin failures).
const scaleConfig = `version: v1
topology: %s
snapshot: %s
jobs: gpu
default_topology: any:preferred
max_snapshot_age: 60s
reload_interval: 1s
decision_field: admin_comment
partitions: [gpu]
actions:
  audit_log: %s
  leader: always
defrag:
  partitions: [gpu]
  hold: 3m
  requeue_window: 1h
  timeout: 30s
  auto:
    enabled: true
    min_gpus: 16
`

// scaleLab is a run's lab and what runs beside it.
type scaleLab struct {
	cfg Config
	lab *slurmlab.Lab
	ctl *controller
	// startCtl starts the controller (again)
	startCtl func() (*controller, error)
	plugins  slurmlab.Plugins
	work     *workload
	dir      string
	// snapshot is the file the controller publishes
	snapshot string
	// on says whether the plugins are in slurm.conf (they are at start)
	on   bool
	log  func(format string, args ...any)
	fill []submitted
	// churn: the stream cancels and replaces fill[:churn] only; the fill
	// jobs after it are the dependency jobs' targets (workload.deps),
	// running through every window, so that a dependency stays unmet
	churn int
}

// Run measures one lab of cfg.Nodes nodes and returns its figures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	t0 := time.Now()
	s, r, err := start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	err = s.measure(ctx, r)
	if err != nil {
		err = fmt.Errorf("%w%s", err, s.keepLogs())
	}
	u := s.lab.Usage()
	r.Start.CtldEndMiB = float64(u.CtldKiB) / 1024
	ts := time.Now()
	s.ctl.stop()
	if e := s.lab.Stop(); e != nil {
		err = errors.Join(err, e)
	}
	r.Start.StopWallS = time.Since(ts).Seconds()
	r.ElapsedS = time.Since(t0).Seconds()
	if err != nil {
		return r, fmt.Errorf("slurmscale: %d nodes: %w", cfg.Nodes, err)
	}
	return r, nil
}

func (s *scaleLab) measure(ctx context.Context, r *Result) error {
	var err error
	if r.Throughput, err = s.throughput(ctx); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	if r.Fill, err = s.fillCluster(ctx); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	for i, b := range s.cfg.Backlogs {
		for _, on := range []bool{true, false} {
			w, err := s.window(ctx, b, on)
			if err != nil {
				return fmt.Errorf("backlog %d, plugins %v: %w", b, on, err)
			}
			// the window is measured: it counts even when cancelling its
			// jobs fails (26.05.5 at 1,024 nodes lost one that way)
			r.Windows = append(r.Windows, w)
			if i == len(s.cfg.Backlogs)-1 && !on {
				break // the last window: the lab's stop ends its jobs (scancel of 20,000 takes 20 minutes and more)
			}
			if err := cancel(ctx, s.lab, w.cleanup); err != nil {
				return fmt.Errorf("backlog %d, plugins %v: cancelling its jobs: %w", b, on, err)
			}
		}
	}
	return nil
}

// start writes the lab's files, starts it and the controller, and waits
// for the first snapshot.
func start(ctx context.Context, cfg Config) (*scaleLab, *Result, error) {
	text, err := ClusterYAML(cfg.Shape, cfg.Nodes)
	if err != nil {
		return nil, nil, err
	}
	c, err := topology.Parse(strings.NewReader(text), "cluster.yaml")
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "gangtopo-scale-")
	if err != nil {
		return nil, nil, err
	}
	paths := map[string]string{"cluster": filepath.Join(dir, "etc", "cluster.yaml"), "config": filepath.Join(dir, "etc", "gangtopo.yaml"),
		"snapshot": filepath.Join(dir, "state", "snapshot.json"), "audit": filepath.Join(dir, "state", "audit.log")}
	for _, sub := range []string{"etc", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, nil, err
		}
	}
	if err := os.WriteFile(paths["cluster"], []byte(text), 0o644); err != nil {
		return nil, nil, err
	}
	conf := fmt.Sprintf(scaleConfig, paths["cluster"], paths["snapshot"], paths["audit"])
	if err := os.WriteFile(paths["config"], []byte(conf), 0o644); err != nil {
		return nil, nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &scaleLab{cfg: cfg, dir: dir, log: logf, on: true, snapshot: paths["snapshot"],
		plugins: slurmlab.Plugins{Dir: cfg.Plugins, JobSubmit: true, Spank: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + paths["config"]}}}
	// the jobs a run keeps in slurmctld: the fill, two backlogs and the
	// stream, with room; finished records go after 30 s
	maxJobs := max(10000, 3*maxOf(cfg.Backlogs)+5000)
	opts := slurmlab.Options{Dir: dir, RemoveDir: true, Cluster: c, ClusterFile: paths["cluster"], Owner: os.Getpid(),
		Plugins: s.plugins, Root: cfg.Root, Expose: []string{cfg.Plugins}, StartBatch: cfg.StartBatch,
		MaxJobCount: maxJobs, MaxArraySize: 1001, MinJobAge: 30 * time.Second, Logf: logf}
	t0 := time.Now()
	if s.lab, err = slurmlab.Start(ctx, opts); err != nil {
		return nil, nil, err
	}
	r := &Result{Date: time.Now().Format("2006-01-02"), Release: s.lab.Release.String(), Series: seriesName(cfg.Root),
		Shape: cfg.Shape, Nodes: len(c.Nodes), GPUs: len(c.GPUs), ControllerUser: "root", MaxRPCShare: cfg.MaxRPCShare}
	r.Start.WallS, r.Start.Batch = time.Since(t0).Seconds(), s.lab.StartBatch()
	u := s.lab.Usage()
	r.Start.Procs, r.Start.RSSMiB, r.Start.CtldMiB = u.Procs, float64(u.RSSKiB)/1024, float64(u.CtldKiB)/1024
	if u.Slurmds > 0 {
		r.Start.SlurmdMiB = float64(u.SlurmdKiB) / 1024 / float64(u.Slurmds)
	}
	s.work = newWorkload(cfg.Seed+1, nil, "", len(c.GPUs)/len(c.Nodes))
	s.startCtl = func() (*controller, error) {
		return startController(s.lab, cfg.Bin, filepath.Join(dir, "state"), paths["cluster"], paths["config"], paths["snapshot"], false, cfg.MaxRPCShare)
	}
	if s.ctl, err = s.startCtl(); err != nil {
		_ = s.lab.Stop()
		return nil, nil, err
	}
	if err := waitNewer(ctx, paths["snapshot"], time.Time{}, time.Minute); err != nil {
		s.ctl.stop()
		_ = s.lab.Stop()
		return nil, nil, fmt.Errorf("the controller's first snapshot: %w (its log: %s)", err, tail(s.ctl.log, 5))
	}
	// the plugin loads it within reload_interval: a job submitted before
	// is left untouched ("no such file"), which the verdicts would count
	return s, r, sleep(ctx, 1500*time.Millisecond)
}

func maxOf(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// seriesName is the series as make names it: host, or the root's name.
func seriesName(root string) string {
	if root == "" {
		return "host"
	}
	return filepath.Base(filepath.Clean(root))
}

// waitNewer waits until path was written after t.
func waitNewer(ctx context.Context, path string, t time.Time, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if fi, err := os.Stat(path); err == nil && fi.ModTime().After(t) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not written within %v", path, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tail is a file's last n lines.
func tail(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// reconfigureSettle is how long a run waits after `scontrol reconfigure`.
const reconfigureSettle = 3 * time.Second

// setPlugins switches both plugins and the controller on or off.
func (s *scaleLab) setPlugins(ctx context.Context, on bool) error {
	if on == s.on {
		return nil
	}
	s.on = on
	p := s.plugins
	p.JobSubmit, p.Spank = on, on
	if err := s.lab.Reconfigure(ctx, p); err != nil {
		return err
	}
	// slurmctld sends the reconfiguration to every slurmd: let it finish
	// in both modes alike before anything is measured
	if err := sleep(ctx, reconfigureSettle); err != nil {
		return err
	}
	if !on {
		s.ctl.stop()
		return nil
	}
	t := time.Now()
	var err error
	if s.ctl, err = s.startCtl(); err != nil {
		return err
	}
	// the controller's first poll publishes a snapshot; the plugin
	// re-reads it within reload_interval (1 s)
	if err := waitNewer(ctx, s.snapshot, t, 2*time.Minute); err != nil {
		return fmt.Errorf("%w (the controller's log: %s)", err, tail(s.ctl.log, 3))
	}
	return sleep(ctx, 1500*time.Millisecond)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// sdiag resets slurmctld's counters (reset) or reads them. A slurmctld
// too busy to answer (Socket timed out: 26.05.5 at 512 nodes, right after
// the harness cancelled a window's 2,000 jobs) is asked again, three times
// with pauses.
func (s *scaleLab) sdiag(ctx context.Context, reset bool) (*Sdiag, error) {
	args := []string{}
	if reset {
		args = append(args, "--reset")
	}
	var out string
	var err error
	for try := 1; try <= 3; try++ {
		if out, err = s.lab.Run(ctx, time.Minute, "sdiag", args...); err == nil || !strings.Contains(err.Error(), "Socket timed out") {
			break
		}
		time.Sleep(time.Duration(try) * 10 * time.Second)
	}
	if err != nil || reset {
		return nil, err
	}
	return ParseSdiag(out)
}

// queue reads every job slurmctld holds.
func (s *scaleLab) queue(ctx context.Context) ([]queueJob, error) {
	out, err := s.lab.Run(ctx, 3*time.Minute, "squeue", "--json")
	if err != nil {
		return nil, err
	}
	return parseSqueue([]byte(out))
}

// cpuCount is the machine's CPUs, for the report.
func cpuCount() int { return runtime.NumCPU() }

// keepLogs copies the controller's and slurmctld's logs out of the lab's
// directory (removed at stop) when a run fails, and says where.
func (s *scaleLab) keepLogs() string {
	dst, err := os.MkdirTemp("", fmt.Sprintf("slurmscale-%d-failed-", s.cfg.Nodes))
	if err != nil {
		return ""
	}
	for _, src := range []string{s.ctl.log, s.lab.Path("log", "slurmctld.log")} {
		if data, err := os.ReadFile(src); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(src)), data, 0o644)
		}
	}
	return " (logs kept in " + dst + ")"
}
