package queue

import (
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// BenchmarkReplayGangTopo: 2,000 Philly-like jobs through the engine on
// the 16-node lab cluster, busy enough that a third are backfilled.
func BenchmarkReplayGangTopo(b *testing.B) {
	c := topotest.Lab16()
	jobs := randomJobs(9, 2000)
	for b.Loop() {
		if _, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), Config{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(jobs)), "jobs/op")
}

// BenchmarkReplayPods: the same jobs as naive pods.
func BenchmarkReplayPods(b *testing.B) {
	c := topotest.Lab16()
	jobs := randomJobs(9, 2000)
	for b.Loop() {
		if _, err := ReplayPods(c, jobs, Config{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTightest: the tightest-feasible yardstick on 256 DGX H100
// nodes with every other GPU busy (once per gang start).
func BenchmarkTightest(b *testing.B) {
	c := topotest.FatTree(2, 8, 16, topotest.DGXH100)
	s := occupancy.New(c)
	for n := range c.Nodes {
		for g := 0; g < 8; g += 2 {
			if err := s.Allocate(alloc(map[topology.NodeID][]int{topology.NodeID(n): {g}})); err != nil {
				b.Fatal(err)
			}
		}
	}
	f := newFeasibility(c)
	for b.Loop() {
		f.tightest(s, 16)
	}
}
