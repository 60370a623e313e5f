package controller

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/clusterfile"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/daemon"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/publish"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// benchLab is the 4,096-node cluster of issue 5's benchmark: 64 leaves of
// 64 DGX H100 under 4 spines, 70% of its 32,768 GPUs busy. It is made once
// per test binary (TestMain removes it).
func benchLab(b *testing.B) (*scaled, string) {
	b.Helper()
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "gangtopo-bench-")
		if benchErr == nil {
			benchScaled = scaleUp(b, benchDir, 64, 64, 0.70)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchScaled, b.TempDir()
}

var (
	benchOnce   sync.Once
	benchDir    string
	benchErr    error
	benchScaled *scaled
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkControllerCycle4096 is one controller cycle on the recorded
// output scaled to 4,096 nodes: read sinfo --json and squeue --json output
// (from files: the commands' own cost is slurmctld's and theirs), parse,
// build the snapshot, publish it (write, fsync, rename, fsync dir) and
// update every metric including the fragmentation gauges. cpu-ms/cycle is
// this process's user+system CPU per cycle (all threads, GC included);
// cpu-%@5s is that as a share of one core at the default 5 s interval.
func BenchmarkControllerCycle4096(b *testing.B) {
	sc, dir := benchLab(b)
	d, err := daemon.New(daemon.Options{Role: "controller", Interval: 5 * time.Second, LogFormat: "json", LogLevel: "info"}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	c, err := New(Config{Topology: sc.topology, Output: filepath.Join(out, "snapshot.json"), Workload: frag.PhillyPrior(1),
		Poll: &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON,
			Files: map[slurmstate.Source]string{slurmstate.SinfoJSON: sc.sinfo, slurmstate.SqueueJSON: sc.squeue}}}, d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, n := cpuTime(), 0
	for b.Loop() {
		if err := c.Cycle(context.Background()); err != nil {
			b.Fatal(err)
		}
		n++
	}
	perCycle := float64((cpuTime() - cpu0).Nanoseconds()) / float64(n) / 1e6
	b.ReportMetric(perCycle, "cpu-ms/cycle")
	b.ReportMetric(100*perCycle/5000, "cpu-%@5s")
	reportInput(b, sc)
}

func reportInput(b *testing.B, sc *scaled) {
	var size int64
	for _, f := range []string{sc.sinfo, sc.squeue} {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.ReportMetric(float64(size)/1e6, "input-MB")
	b.ReportMetric(float64(sc.running), "running-jobs")
}

// The stages on their own, to see where a cycle's time goes.

func BenchmarkParseSinfo4096(b *testing.B) {
	sc, _ := benchLab(b)
	data, _ := os.ReadFile(sc.sinfo)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := slurmstate.ParseSinfoJSON(data, "sinfo"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSqueue4096(b *testing.B) {
	sc, _ := benchLab(b)
	data, _ := os.ReadFile(sc.squeue)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := slurmstate.ParseSqueueJSON(data, "squeue"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildSnapshot4096(b *testing.B) {
	sc, _ := benchLab(b)
	c, st := parsedLab(b, sc)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := slurmstate.BuildSnapshot(c, st, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublish4096: encoding the snapshot (occupancy.Encode) and the
// atomic write with its two fsyncs.
func BenchmarkPublish4096(b *testing.B) {
	sc, dir := benchLab(b)
	c, st := parsedLab(b, sc)
	s, _, err := slurmstate.BuildSnapshot(c, st, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := publish.WriteSnapshot(filepath.Join(dir, "s.json"), s, "bench", publish.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFragMetrics4096: the fragmentation report behind the gauges.
func BenchmarkFragMetrics4096(b *testing.B) {
	sc, _ := benchLab(b)
	c, st := parsedLab(b, sc)
	s, _, err := slurmstate.BuildSnapshot(c, st, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	w := frag.PhillyPrior(1)
	m := newMetrics(prometheus.NewRegistry(), func() float64 { return 0 })
	meter := frag.NewMeter(c, &w)
	b.ReportAllocs()
	for b.Loop() {
		m.observeFrag(meter, s)
	}
}

func parsedLab(b *testing.B, sc *scaled) (*topology.Cluster, *slurmstate.State) {
	c, err := clusterfile.Load(sc.topology)
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := slurmstate.Poll(context.Background(), &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON,
		Files: map[slurmstate.Source]string{slurmstate.SinfoJSON: sc.sinfo, slurmstate.SqueueJSON: sc.squeue}})
	if err != nil {
		b.Fatal(err)
	}
	return c, st
}
