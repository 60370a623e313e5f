package place

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// benchCluster is the benchmark fat tree: 4 spines x 16 leaves x 64 DGX
// H100 nodes = 4,096 nodes, 32,768 GPUs.
func benchCluster() *topology.Cluster {
	return topotest.FatTree(4, 16, 64, topotest.DGXH100)
}

// fillTo places jobs drawn from the Philly mix (1, 2, 4, 8 GPUs and 2- and
// 4-node gangs) with the engine itself until the given fraction of GPUs is
// allocated: a realistic, engine-packed 70% occupancy.
func fillTo(tb testing.TB, e *Engine, frac float64) *occupancy.Snapshot {
	c := e.Cluster()
	s := occupancy.New(c)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 4, 8, 16, 32}
	weights := []float64{0.859, 0.020, 0.021, 0.086, 0.0104, 0.0035}
	target := int(frac * float64(c.NumGPUs()))
	used := 0
	for used < target {
		x, g := rng.Float64(), 1
		for i, w := range weights {
			if x < w {
				g = sizes[i]
				break
			}
			x -= w
		}
		r := request.Request{GPUs: g, CPUMilli: int64(g) * 1000, Tier: topology.TierLeaf, Mode: request.Preferred}
		res := e.Place(s, r)
		if res.Status != Placed {
			continue
		}
		if err := s.Allocate(res.Alloc); err != nil {
			tb.Fatal(err)
		}
		used += g
	}
	return s
}

var benchState struct {
	e *Engine
	s *occupancy.Snapshot
}

func benchSetup(b *testing.B) (*Engine, *occupancy.Snapshot) {
	if benchState.e == nil {
		e := New(benchCluster(), Options{})
		benchState.e, benchState.s = e, fillTo(b, e, 0.70)
	}
	return benchState.e, benchState.s
}

func benchPlace(b *testing.B, r request.Request) {
	e, s := benchSetup(b)
	b.ReportAllocs()
	b.ResetTimer()
	var res Result
	for b.Loop() {
		res = e.Place(s, r)
	}
	b.StopTimer()
	if res.Status != Placed {
		b.Fatalf("not placed: %s", res.Message)
	}
}

// BenchmarkPlace1GPU: a 1-GPU job on the 4,096-node fat tree at 70%.
func BenchmarkPlace1GPU(b *testing.B) { benchPlace(b, request.Request{GPUs: 1, CPUMilli: 1000}) }

// BenchmarkPlace8GPU: a whole-node job.
func BenchmarkPlace8GPU(b *testing.B) { benchPlace(b, request.Request{GPUs: 8, CPUMilli: 8000}) }

// BenchmarkPlace256GPULeaf: a 256-GPU gang that must stay in one leaf.
func BenchmarkPlace256GPULeaf(b *testing.B) {
	benchPlace(b, request.Request{GPUs: 256, CPUMilli: 256000, Tier: topology.TierLeaf})
}

// BenchmarkSnapshotMemory reports the bytes allocated to build the
// 4,096-node cluster and one occupancy snapshot of it (metrics
// cluster-bytes and snapshot-bytes; the snapshot is what the Slurm plugin
// and the simulator hold per generation).
func BenchmarkSnapshotMemory(b *testing.B) {
	var m0, m1, m2 runtime.MemStats
	var c *topology.Cluster
	var s *occupancy.Snapshot
	for b.Loop() {
		c, s = nil, nil
		runtime.GC()
		runtime.ReadMemStats(&m0)
		c = benchCluster()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		s = occupancy.New(c)
		runtime.ReadMemStats(&m2)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(c)
	// The cluster: live heap after a collection (what stays, not the
	// garbage of building it). The snapshot: bytes New allocated, all kept.
	b.ReportMetric(float64(m1.HeapAlloc)-float64(m0.HeapAlloc), "cluster-bytes")
	b.ReportMetric(float64(m2.TotalAlloc-m1.TotalAlloc), "snapshot-bytes")
}

// BenchmarkPlaceLent1GPU: a borrowing 1-GPU job (PlaceLent) on the same
// state, with a borrowed GPU on every 16th node: the lending keys add a
// pass over the nodes per call and a look-up per candidate.
func BenchmarkPlaceLent1GPU(b *testing.B) {
	e, s := benchSetup(b)
	var l Lending
	for n := range e.Cluster().Nodes {
		l.Borrowed = append(l.Borrowed, 0)
		if n%16 == 0 {
			l.Borrowed[n] = 1
		}
	}
	r := request.Request{GPUs: 1, CPUMilli: 1000}
	b.ReportAllocs()
	b.ResetTimer()
	var res Result
	for b.Loop() {
		res = e.PlaceLent(s, r, l)
	}
	b.StopTimer()
	if res.Status != Placed {
		b.Fatalf("not placed: %s", res.Message)
	}
}
