package ctld

import (
	"fmt"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// philly is the GPU-count mix of the reference sequences (and of the
// engine benchmarks): 1, 2, 4, 8 GPUs, 16 and 32 GPUs as leaf gangs.
var philly = struct {
	sizes   []int
	weights []float64
}{[]int{1, 2, 4, 8, 16, 32}, []float64{0.859, 0.020, 0.021, 0.086, 0.0104, 0.0035}}

func drawSize(rng *rand.Rand) int {
	x := rng.Float64()
	for i, w := range philly.weights {
		if x < w {
			return philly.sizes[i]
		}
		x -= w
	}
	return 1
}

// benchGate is a gate over a 1,000-node fat tree (2 spines x 10 leaves x
// 50 DGX H100 = 8,000 GPUs) whose snapshot the engine itself filled to 70%
// with the Philly mix, loaded from a file as in slurmctld.
func benchGate(b *testing.B) *Gate {
	b.Helper()
	c := topotest.FatTree(2, 10, 50, topotest.DGXH100)
	s := fill70(b, c)
	cfg := Defaults()
	cfg.Jobs, cfg.PendingHold, cfg.Deadline = jobsubmit.ScopeGPU, 0, time.Second // no holds: every call sees the same 70%
	cfg.Default = request.Option{Tier: topology.TierCluster, Mode: request.Preferred}
	cfg.Snapshot = filepath.Join(b.TempDir(), "snapshot.json")
	f, err := os.Create(cfg.Snapshot)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Encode(f, "bench"); err != nil {
		b.Fatal(err)
	}
	f.Close()
	g, err := NewWithCluster(cfg, c)
	if err != nil {
		b.Fatal(err)
	}
	if msg := g.Store().Refresh(); msg == "" {
		b.Fatal("snapshot not loaded")
	}
	return g
}

func fill70(b *testing.B, c *topology.Cluster) *occupancy.Snapshot {
	e := place.New(c, place.Options{})
	s := occupancy.New(c)
	s.Time = time.Now().Add(time.Hour) // never stale during the benchmark
	rng := rand.New(rand.NewPCG(1, 2))
	for used, target := 0, int(0.7*float64(c.NumGPUs())); used < target; {
		g := drawSize(rng)
		res := e.Place(s, request.Request{GPUs: g, CPUMilli: int64(g) * 1000, Tier: topology.TierLeaf, Mode: request.Preferred})
		if res.Status != place.Placed {
			continue
		}
		if err := s.Allocate(res.Alloc); err != nil {
			b.Fatal(err)
		}
		used += g
	}
	return s
}

// BenchmarkSubmit1000Nodes is the plugin's per-call cost inside slurmctld:
// Gate.Submit (scope, request, snapshot, the engine under its deadline, the
// rewrite) for jobs drawn from the Philly mix, 16 and 32 GPUs as
// --gang-topology=leaf gangs, the rest without the option (jobs: gpu).
// p50/p99/max are over the timed calls. The caller is an ordinary
// goroutine, as libgangtopo's answering goroutine is (the shim hands jobs
// over a pipe, not through a cgo callback): the engine's goroutine may run
// on another thread, and those hand-offs are part of the cost.
func BenchmarkSubmit1000Nodes(b *testing.B) {
	g := benchGate(b)
	rng := rand.New(rand.NewPCG(3, 4))
	jobs := make([]jobsubmit.Job, 512)
	for i := range jobs {
		n := drawSize(rng)
		jobs[i] = jobsubmit.Job{Name: "bench", TresPerJob: "gres:gpu:" + itoa(n), CPUsPerTres: "gres:gpu:1"}
		if n >= 16 {
			jobs[i].GangTopology = "leaf"
		}
	}
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		res := g.Submit(jobs[i%len(jobs)], time.Now())
		lat = append(lat, time.Since(t0))
		if res.Action == jobsubmit.Keep && res.Decision.Verdict == jobsubmit.VerdictUntouched {
			b.Fatalf("job untouched: %s", res.Log)
		}
		i++
	}
	b.StopTimer()
	sort.Slice(lat, func(a, c int) bool { return lat[a] < lat[c] })
	us := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(us(0.5), "p50-us")
	b.ReportMetric(us(0.99), "p99-us")
	b.ReportMetric(us(1), "max-us")
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// BenchmarkSubmitArray1000Nodes is one job array of 200 1-GPU tasks on the
// same 70%-full 1,000-node cluster, under the default 50 ms deadline: every
// task is placed by the engine (tasks.go) until 60% of the deadline is
// spent. tasks/op is how many were placed within it.
func BenchmarkSubmitArray1000Nodes(b *testing.B) {
	g := benchGate(b)
	g.cfg.Deadline = Defaults().Deadline
	job := jobsubmit.Job{Name: "bench", TresPerJob: "gres:gpu:1", CPUsPerTres: "gres:gpu:1", ArrayInx: "0-199"}
	var lat []time.Duration
	tasks := 0
	for b.Loop() {
		t0 := time.Now()
		res := g.Submit(job, time.Now())
		lat = append(lat, time.Since(t0))
		if res.Decision.Verdict != jobsubmit.VerdictPlaced {
			b.Fatalf("array: %s", res.Log)
		}
		placed := res.Decision.Tasks // all, unless the decision says how many
		var total int
		if i := strings.Index(res.Decision.Text, " of the "); i >= 0 {
			fmt.Sscanf(res.Decision.Text[strings.LastIndex(res.Decision.Text[:i], " ")+1:], "%d of the %d", &placed, &total)
		}
		tasks += placed
	}
	b.StopTimer()
	sort.Slice(lat, func(a, c int) bool { return lat[a] < lat[c] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-us")
	b.ReportMetric(float64(tasks)/float64(len(lat)), "tasks/op")
}
