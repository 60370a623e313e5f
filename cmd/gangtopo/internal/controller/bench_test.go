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

// The 4,096-node inputs of issue 5's benchmark, two ways:
//
//	Recorded  the lab's recorded sinfo/squeue output copied 512 times:
//	          4,096 nodes, 1,536 jobs (512 running on 2 nodes with 12 GPUs)
//	Philly70  64 leaves of 64 DGX H100 under 4 spines, 70% of 32,768 GPUs
//	          busy with the Philly job mix (about 14,000 running jobs, most
//	          of 1 GPU), plus 2,048 pending and 1,024 completed jobs
//
// Each is made once per test binary (TestMain removes them).
var benchInputs = []struct {
	name string
	make func(testing.TB, string) *scaled
}{
	{"Recorded", func(t testing.TB, dir string) *scaled { return scaleRecorded(t, dir, 512) }},
	{"Philly70", func(t testing.TB, dir string) *scaled { return scaleUp(t, dir, 64, 64, 0.70) }},
}

var (
	benchMu   sync.Mutex
	benchDirs []string
	benchMade = map[string]*scaled{}
)

func benchLab(b *testing.B, name string, mk func(testing.TB, string) *scaled) *scaled {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if sc, ok := benchMade[name]; ok {
		return sc
	}
	dir, err := os.MkdirTemp("", "gangtopo-bench-")
	if err != nil {
		b.Fatal(err)
	}
	benchDirs = append(benchDirs, dir)
	benchMade[name] = mk(b, dir)
	return benchMade[name]
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// eachInput runs f as a sub-benchmark per input.
func eachInput(b *testing.B, f func(b *testing.B, sc *scaled)) {
	for _, in := range benchInputs {
		b.Run(in.name, func(b *testing.B) { f(b, benchLab(b, in.name, in.make)) })
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkControllerCycle4096 is one controller cycle: read the recorded
// sinfo --json and squeue --json output (from files: running the commands
// is slurmctld's and their own cost), parse, build the snapshot, publish it
// (write, fsync, rename, fsync dir) and update every metric including the
// fragmentation gauges. cpu-ms/cycle is this process's user+system CPU per
// cycle (all threads, GC included); cpu-%@5s is that as a share of one core
// at the default 5 s interval.
func BenchmarkControllerCycle4096(b *testing.B) {
	eachInput(b, func(b *testing.B, sc *scaled) {
		d, err := daemon.New(daemon.Options{Role: "controller", Interval: 5 * time.Second, LogFormat: "json", LogLevel: "info"}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(Config{Topology: sc.topology, Output: filepath.Join(b.TempDir(), "snapshot.json"), Workload: frag.PhillyPrior(1),
			Poll: filePoll(sc)}, d)
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
	})
}

func filePoll(sc *scaled) *slurmstate.PollConfig {
	return &slurmstate.PollConfig{NodesFrom: slurmstate.SinfoJSON, JobsFrom: slurmstate.SqueueJSON,
		Files: map[slurmstate.Source]string{slurmstate.SinfoJSON: sc.sinfo, slurmstate.SqueueJSON: sc.squeue}}
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
	eachInput(b, func(b *testing.B, sc *scaled) { benchParse(b, sc.sinfo, slurmstate.ParseSinfoJSON) })
}

func BenchmarkParseSqueue4096(b *testing.B) {
	eachInput(b, func(b *testing.B, sc *scaled) {
		benchParse(b, sc.squeue, func(data []byte, label string) ([]slurmstate.Job, string, error) {
			return slurmstate.ParseSqueueJSON(data, label)
		})
	})
}

func benchParse[T any](b *testing.B, file string, parse func([]byte, string) (T, string, error)) {
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parse(data, file); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildSnapshot4096(b *testing.B) {
	eachInput(b, func(b *testing.B, sc *scaled) {
		c, st := parsedLab(b, sc)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := slurmstate.BuildSnapshot(c, st, time.Now(), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPublish4096: encoding the snapshot and the atomic write with its
// two fsyncs.
func BenchmarkPublish4096(b *testing.B) {
	eachInput(b, func(b *testing.B, sc *scaled) {
		c, st := parsedLab(b, sc)
		s, _, err := slurmstate.BuildSnapshot(c, st, time.Now(), "")
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "s.json")
		b.ReportAllocs()
		for b.Loop() {
			if err := publish.WriteSnapshot(path, s, "bench", publish.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFragMetrics4096: the fragmentation report behind the gauges.
func BenchmarkFragMetrics4096(b *testing.B) {
	eachInput(b, func(b *testing.B, sc *scaled) {
		c, st := parsedLab(b, sc)
		s, _, err := slurmstate.BuildSnapshot(c, st, time.Now(), "")
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
	})
}

func parsedLab(b *testing.B, sc *scaled) (*topology.Cluster, *slurmstate.State) {
	c, err := clusterfile.Load(sc.topology)
	if err != nil {
		b.Fatal(err)
	}
	st, _, err := slurmstate.Poll(context.Background(), filePoll(sc))
	if err != nil {
		b.Fatal(err)
	}
	return c, st
}
