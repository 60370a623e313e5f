package controller

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/testlog"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

const testdata = "../slurmstate/testdata/"

// lab is a controller over fake Slurm commands in bin, publishing into a
// private directory, logging into logs.
type lab struct {
	t       *testing.T
	bin     string
	out     string
	topo    string
	logs    testlog.Buffer
	d       *daemon.Daemon
	c       *Controller
	cluster *topology.Cluster
}

func newLab(t *testing.T) *lab {
	t.Helper()
	l := &lab{t: t, bin: t.TempDir()}
	dir := t.TempDir()
	l.out = filepath.Join(dir, "snapshot.json")
	l.topo = filepath.Join(dir, "cluster.yaml")
	copyFile(t, testdata+"lab8.yaml", l.topo)
	l.slurm("sinfo", "cat "+abs(t, testdata+"sinfo.json"))
	l.slurm("squeue", "cat "+abs(t, testdata+"squeue.json"))
	var err error
	l.d, err = daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "debug"}, &l.logs)
	if err != nil {
		t.Fatal(err)
	}
	l.c, err = New(Config{Topology: l.topo, Output: l.out, Workload: frag.PhillyPrior(1),
		Poll: &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON, BinDir: l.bin, Timeout: 2 * time.Second}}, l.d)
	if err != nil {
		t.Fatal(err)
	}
	l.cluster = l.c.topo.Cluster
	return l
}

// slurm (re)writes a fake Slurm command.
func (l *lab) slurm(name, body string) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lab) published() (*occupancy.Snapshot, []byte) {
	l.t.Helper()
	data, err := os.ReadFile(l.out)
	if err != nil {
		l.t.Fatal(err)
	}
	s, err := occupancy.Decode(bytes.NewReader(data), l.out, l.cluster)
	if err != nil {
		l.t.Fatalf("published snapshot does not decode: %v", err)
	}
	return s, data
}

func (l *lab) errors(stage string) float64 {
	return testutil.ToFloat64(l.c.m.pollErrors.WithLabelValues(stage))
}

// testActions is how a test controller's duties reach its fake Slurm in
// bin: always the leader, auditing into a temporary directory (set into
// cfg), slurm.conf listing the plugin.
func testActions(t *testing.T, bin string, cfg *ctld.Config) *ActionsSetup {
	cfg.Actions.Leader = ctld.LeaderAlways
	cfg.Actions.AuditLog = filepath.Join(t.TempDir(), "actions.log")
	cfg.Defrag.AuditLog = cfg.Actions.AuditLog
	return &ActionsSetup{Run: actuate.SlurmRunner(bin),
		ShowConfig: func(context.Context) (string, error) { return "JobSubmitPlugins        = gangtopo\n", nil }}
}

func copyFile(t *testing.T, from, to string) {
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func abs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCyclePublishesAndMeasures(t *testing.T) {
	l := newLab(t)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := l.published()
	if s.Generation == 0 || len(s.Jobs) != 1 {
		t.Fatalf("generation %d, %d jobs", s.Generation, len(s.Jobs))
	}
	if got := testutil.ToFloat64(l.c.m.generation); got != float64(s.Generation) {
		t.Errorf("generation gauge %v, file %d", got, s.Generation)
	}
	// lab8: leaf1 = node[01-04] with node01 full and node02 half busy: 2 whole free
	// nodes and 8+8+4 = 20 free GPUs; leaf2 untouched: 4 nodes, 32 GPUs.
	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"leaf1 whole free nodes", testutil.ToFloat64(l.c.m.leafWhole.WithLabelValues("leaf1")), 2},
		{"leaf1 free GPUs", testutil.ToFloat64(l.c.m.leafFree.WithLabelValues("leaf1")), 20},
		{"leaf2 whole free nodes", testutil.ToFloat64(l.c.m.leafWhole.WithLabelValues("leaf2")), 4},
		{"allocated GPUs", testutil.ToFloat64(l.c.m.gpus.WithLabelValues("allocated")), 12},
		{"8-GPU gangs startable", testutil.ToFloat64(l.c.m.startable.WithLabelValues("8", "")), 6},
		{"32-GPU gangs startable", testutil.ToFloat64(l.c.m.startable.WithLabelValues("32", "")), 1}, // 20 free in leaf1, 32 in leaf2
		{"mixed nodes", testutil.ToFloat64(l.c.m.nodes.WithLabelValues("mixed")), 2},
		{"jobs", testutil.ToFloat64(l.c.m.jobs), 1},
		{"degraded leaves", testutil.ToFloat64(l.c.m.degraded.WithLabelValues("leaf")), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(l.c.m.frag); n < 2 {
		t.Errorf("fragmentation gauges for %d tiers, want node and leaf", n)
	}
}

// A failing, hanging or garbled Slurm command keeps the last good snapshot
// byte for byte, is counted under its stage and logged; the next good poll
// publishes a higher generation.
func TestFailuresKeepLastSnapshot(t *testing.T) {
	l := newLab(t)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	good, goodBytes := l.published()
	failures := []struct {
		name, cmd, body, stage, log string
	}{
		{"sinfo fails", "sinfo", "echo 'sinfo: error: Unable to contact slurm controller (connect failure)' >&2; exit 1", "sinfo", "exit status 1: sinfo: error: Unable to contact slurm controller"},
		{"squeue hangs", "squeue", "sleep 30", "squeue", "squeue --json: no answer within "}, // 2s, or 3x the last good run
		{"sinfo garbled", "sinfo", "echo '{\"meta\": {\"plugin\": {\"type\": \"openapi/v0.0.38\"}}, \"nodes\": [{\"name\": \"node01\"'", "sinfo", "want ',' or '}' in object, found end of output (truncated?)"},
		{"squeue from another Slurm", "squeue", "echo '{\"meta\": {\"plugin\": {\"type\": \"openapi/v0.0.39\"}}, \"jobs\": []}'", "squeue", `prints plugin.type "openapi/v0.0.39"`},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			l.slurm("sinfo", "cat "+abs(t, testdata+"sinfo.json"))
			l.slurm("squeue", "cat "+abs(t, testdata+"squeue.json"))
			l.slurm(f.cmd, f.body)
			before := l.errors(f.stage)
			start := time.Now()
			err := l.c.Cycle(context.Background())
			if err == nil || !strings.Contains(err.Error(), f.log) {
				t.Fatalf("Cycle error = %v, want it to contain %q", err, f.log)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("the failed poll took %s", d)
			}
			if _, now := l.published(); !bytes.Equal(now, goodBytes) {
				t.Error("the published snapshot changed")
			}
			if got := l.errors(f.stage); got != before+1 {
				t.Errorf("poll errors{stage=%s} = %v, want %v", f.stage, got, before+1)
			}
		})
	}
	l.slurm("sinfo", "cat "+abs(t, testdata+"sinfo.json"))
	l.slurm("squeue", "cat "+abs(t, testdata+"squeue.json"))
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, _ := l.published(); s.Generation <= good.Generation {
		t.Errorf("generation after recovery %d, before %d", s.Generation, good.Generation)
	}
	if !strings.Contains(l.logs.String(), "polling recovered") {
		t.Errorf("no recovery log line in:\n%s", l.logs.String())
	}
}

// A changed topology file is picked up; a broken one is counted and the old
// topology kept.
func TestTopologyReload(t *testing.T) {
	l := newLab(t)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(l.topo, []byte("version: v1\nname: lab\nnodes: [\n"), 0o644)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatalf("a broken topology file failed the cycle: %v", err)
	}
	if l.errors("topology") != 1 || l.c.topo.Cluster.Name != "lab" {
		t.Errorf("topology errors %v, cluster %s", l.errors("topology"), l.c.topo.Cluster)
	}
	// node08 moves into leaf1: a new topology (and hash)
	data, _ := os.ReadFile(testdata + "lab8.yaml")
	moved := strings.NewReplacer(`"node[01-04]"`, `"node[01-04],node08"`, `"node[05-08]"`, `"node[05-07]"`).Replace(string(data))
	os.WriteFile(l.topo, []byte(moved), 0o644)
	old := l.c.topo.Cluster.Hash
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.c.topo.Cluster.Hash == old || !strings.Contains(l.logs.String(), "topology file changed; using the new topology") {
		t.Error("the new topology was not loaded")
	}
	if got := testutil.ToFloat64(l.c.m.leafWhole.WithLabelValues("leaf1")); got != 3 {
		t.Errorf("leaf1 whole free nodes after the move = %v, want 3", got)
	}
}

// Restarting keeps generations increasing and clears a killed writer's
// temporary file.
func TestRestart(t *testing.T) {
	l := newLab(t)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	first, _ := l.published()
	os.WriteFile(filepath.Join(filepath.Dir(l.out), ".snapshot.json.tmp-123"), []byte("{half"), 0o600)
	c2, err := New(l.c.cfg, l.d2(t))
	if err != nil {
		t.Fatal(err)
	}
	if c2.generation != first.Generation {
		t.Errorf("restarted at generation %d, file has %d", c2.generation, first.Generation)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(l.out), ".snapshot.json.tmp-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

func (l *lab) d2(t *testing.T) *daemon.Daemon {
	d, err := daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "info"}, &l.logs)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewRefusesUnsafeOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	d, _ := daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "info"}, &bytes.Buffer{})
	_, err := New(Config{Topology: testdata + "lab8.yaml", Output: filepath.Join(dir, "s.json"), Poll: &slurmstate.PollConfig{}}, d)
	var de *publish.DirError
	if err == nil || !strings.Contains(err.Error(), "writable by its group and everyone") || !errors.As(err, &de) {
		t.Errorf("New = %v, want a DirError", err)
	}
}

// The scaled-up outputs the benchmark reads are valid: a small version
// parses, builds without disagreements and lands at the asked occupancy.
func TestScaleUp(t *testing.T) {
	sc := scaleUp(t, t.TempDir(), 4, 16, 0.7)
	d, _ := daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "info"}, &bytes.Buffer{})
	out := filepath.Join(t.TempDir(), "s.json")
	c, err := New(Config{Topology: sc.topology, Output: out, Workload: frag.PhillyPrior(1), Poll: filePoll(sc)}, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.m.gpus.WithLabelValues("allocated")); int(got) != sc.busyGPUs || sc.busyGPUs < int(0.7*float64(sc.totalGPUs)) {
		t.Errorf("allocated GPUs %v, generator placed %d of %d", got, sc.busyGPUs, sc.totalGPUs)
	}
	if got := testutil.ToFloat64(c.m.jobs); int(got) != sc.running {
		t.Errorf("%v jobs in the snapshot, %d running", got, sc.running)
	}
	if n := testutil.ToFloat64(c.m.mismatch.WithLabelValues("not_in_slurm")) + testutil.ToFloat64(c.m.mismatch.WithLabelValues("unattributed_gpus")); n != 0 {
		t.Errorf("%v nodes disagree", n)
	}
}

// The recorded output copied 32 times is the lab 32 times over: 256 nodes
// in 4 leaves, 32 running jobs, no disagreement with its topology.
func TestScaleRecorded(t *testing.T) {
	sc := scaleRecorded(t, t.TempDir(), 32)
	d, _ := daemon.New(daemon.Options{Role: "controller", Interval: time.Second, LogFormat: "json", LogLevel: "info"}, &bytes.Buffer{})
	c, err := New(Config{Topology: sc.topology, Output: filepath.Join(t.TempDir(), "s.json"), Workload: frag.PhillyPrior(1), Poll: filePoll(sc)}, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.m.gpus.WithLabelValues("allocated")); got != 32*12 {
		t.Errorf("allocated GPUs %v, want 32 x 12", got)
	}
	if c.problems != "" {
		t.Errorf("problems: %s", c.problems)
	}
}

// When most jobs gangtopo decided about were left as submitted because the
// cluster file lacks their partition (a file built without --partition),
// the controller says so: a gauge by verdict and cause, and one warning
// when it starts and one line when it ends.
func TestWarnsWhenMostJobsNotCovered(t *testing.T) {
	l := newLab(t)
	data, err := os.ReadFile(testdata + "squeue.json")
	if err != nil {
		t.Fatal(err)
	}
	untouched := `"admin_comment": "gangtopo v1 untouched cause=not_covered request=leaf:required gpus=8: partition gpu is not in the cluster file of lab8"`
	// five jobs: the sample's three plus two pending copies of job 3
	jobs := strings.Replace(string(data), `"admin_comment": ""`, untouched, -1)
	i := strings.Index(jobs, `"jobs": [`) + len(`"jobs": [`)
	j := strings.LastIndex(jobs, `"account"`)
	j = strings.LastIndex(jobs[:j], "{")
	pending := strings.Replace(strings.Replace(jobs[j:strings.LastIndex(jobs, "]")], `"job_state": "RUNNING"`, `"job_state": "PENDING"`, 1), `"job_id": 3`, `"job_id": 4`, 1)
	jobs = jobs[:i] + pending + "," + pending + "," + jobs[i:]
	file := filepath.Join(t.TempDir(), "squeue.json")
	if err := os.WriteFile(file, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	l.slurm("squeue", "cat "+file)
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(l.c.m.decisions.WithLabelValues("untouched", "not_covered")); got != 5 {
		t.Errorf("gangtopo_decisions{untouched,not_covered} = %v, want 5", got)
	}
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(l.logs.String(), "left as submitted because the cluster file does not cover"); n != 1 {
		t.Errorf("%d warnings, want one:\n%s", n, l.logs.String())
	}
	l.slurm("squeue", "cat "+abs(t, testdata+"squeue.json"))
	if err := l.c.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.logs.String(), "the cluster file covers most decided jobs again") {
		t.Errorf("no all-clear logged:\n%s", l.logs.String())
	}
}
