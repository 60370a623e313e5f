package stockslurm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// halfBusy occupies about half of the GPUs of c at random (seeded), one
// CPU per GPU, so the model sees a fragmented cluster.
func halfBusy(c *topology.Cluster) *occupancy.Snapshot {
	s := occupancy.New(c)
	rng := rand.New(rand.NewPCG(1, 2))
	for id := range c.Nodes {
		var gpus []int
		for g := 0; g < c.Nodes[id].NumGPUs(); g++ {
			if rng.IntN(2) == 0 {
				gpus = append(gpus, g)
			}
		}
		if len(gpus) == 0 {
			continue
		}
		na := occupancy.NodeAlloc{Node: topology.NodeID(id), GPUs: gpus, Milli: occupancy.WholeGPU, CPUMilli: int32(1000 * len(gpus))}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{na}}); err != nil {
			panic(err)
		}
	}
	return s
}

// BenchmarkPlace measures one decision on 256 DGX H100 nodes (16 leaves of
// 16 under 2 spines), half of the GPUs busy, for gang sizes up to 128.
func BenchmarkPlace(b *testing.B) {
	c := topotest.FatTree(2, 8, 16, topotest.DGXH100)
	s := halfBusy(c)
	for _, m := range []*Model{NewTree(c), NewFlat(c)} {
		for _, g := range []int{1, 8, 32, 128} {
			r := &request.Request{GPUs: g, CPUMilli: int64(g) * 1000}
			b.Run(fmt.Sprintf("%s/gpus=%d", kind(m), g), func(b *testing.B) {
				for b.Loop() {
					m.Place(s, r)
				}
			})
		}
	}
}

// BenchmarkPlaceWide measures one decision on 1,213 eight-GPU nodes without
// NUMA facts (the size of the Alibaba openb cluster), half of the GPUs busy:
// the per-pod cost of the slurm baselines in an FGD-protocol replay.
func BenchmarkPlaceWide(b *testing.B) {
	c := topotest.FatTree(0, 1, 1213, func(name string) topology.NodeSpec {
		return topotest.SmallGPUNode(name, "v100", 8)
	})
	s := halfBusy(c)
	for _, m := range []*Model{NewTree(c), NewFlat(c)} {
		for _, r := range []*request.Request{{GPUs: 1, CPUMilli: 4000}, {GPUs: 1, Milli: 500, CPUMilli: 4000}, {GPUs: 8}} {
			b.Run(fmt.Sprintf("%s/gpus=%d/milli=%d", kind(m), r.GPUs, r.Share()), func(b *testing.B) {
				for b.Loop() {
					m.Place(s, r)
				}
			})
		}
	}
}

// kind names a model in benchmark names ("slurm-flat" would read as a
// GOMAXPROCS suffix to benchmark tools).
func kind(m *Model) string {
	if m.sw != nil {
		return "tree"
	}
	return "flat"
}
