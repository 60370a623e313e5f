package place

import (
	"fmt"
	"testing"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// Single-node jobs are scored by the fill model (frag.FillModel): what the
// typical workload would never use after the job, including GPUs the
// node's CPUs could not feed.
func TestFillScoring(t *testing.T) {
	// Typical jobs: one whole GPU with 8 CPUs (8 milli-CPUs per milli-GPU).
	w := frag.Workload{Node: []frag.NodeShape{{GPUs: 1, Milli: 1000, CPUMilli: 8000, Weight: 1}}}
	shares := frag.Workload{Node: []frag.NodeShape{
		{GPUs: 1, Milli: 300, Weight: 0.5},
		{GPUs: 1, Milli: 500, Weight: 0.5},
	}}
	philly := frag.PhillyPrior(1)
	tests := []struct {
		name string
		prep func(t *testing.T, s *occupancy.Snapshot)
		w    *frag.Workload
		req  request.Request
		want string
	}{
		// node02 has 16 CPUs left for 8 GPUs: only 2 GPUs can be fed, 6
		// are stranded. A job that needs GPUs but no CPUs uses one of
		// those there (waste -1000); on node01 it would change nothing.
		// FGD sees no difference (a whole-GPU job still fits both), and
		// Slurm order would pick node01.
		{"cpu-light job uses GPUs the CPUs cannot feed", func(t *testing.T, s *occupancy.Snapshot) {
			takeCPU(t, s, "node02", 48000)
		}, &w, request.Request{GPUs: 1}, "node02:0"},
		// Typical shares of 300 and 500: a 500 share on a GPU with 800
		// free leaves 300, which a 300 share fills (Waste[800] = 50 ->
		// Waste[300] = 0); on a GPU with 600 free it leaves 100 that
		// nothing fills (Waste[600] = 50 -> Waste[100] = 100). FGD would
		// take the tighter GPU: a 100 remnant fragments less than 300.
		// node01 has 5 free GPUs, node02 4, the rest are full. The fill
		// model sees whole GPUs as equally fillable either way; FGD's
		// multi-GPU term sees that a 1-GPU job on node02 breaks its exact
		// 4-GPU slot while on node01 it leaves two 4-GPU slots.
		{"keeps multi-GPU slots", func(t *testing.T, s *occupancy.Snapshot) {
			takeGPUs(t, s, "node01", 3)
			takeGPUs(t, s, "node02", 4)
			for i := 3; i <= 16; i++ {
				takeGPUs(t, s, fmt.Sprintf("node%02d", i), 8)
			}
		}, &philly, request.Request{GPUs: 1}, "node01:3"},
		{"share leaves a fillable remnant", func(t *testing.T, s *occupancy.Snapshot) {
			takeShare(t, s, "node01", 0, 200) // 800 left
			takeShare(t, s, "node02", 0, 400) // 600 left
		}, &shares, request.Request{GPUs: 1, Milli: 500}, "node01:0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.Lab16()
			s := occupancy.New(c)
			tc.prep(t, s)
			res := New(c, Options{Workload: tc.w}).Place(s, tc.req)
			if res.Status != Placed {
				t.Fatalf("status %v: %s", res.Status, res.Message)
			}
			if got := Describe(c, res.Alloc); got != tc.want {
				t.Errorf("placed on %s, want %s", got, tc.want)
			}
		})
	}
}

func takeCPU(t *testing.T, s *occupancy.Snapshot, name string, cpu int32) {
	t.Helper()
	id, _ := s.Cluster.NodeByName(name)
	if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, CPUMilli: cpu}}}); err != nil {
		t.Fatal(err)
	}
}

func takeShare(t *testing.T, s *occupancy.Snapshot, name string, gpu int, milli uint16) {
	t.Helper()
	id, _ := s.Cluster.NodeByName(name)
	if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: []int{gpu}, Milli: milli}}}); err != nil {
		t.Fatal(err)
	}
}

func takeGPUs(t *testing.T, s *occupancy.Snapshot, name string, k int) {
	t.Helper()
	id, _ := s.Cluster.NodeByName(name)
	gpus := make([]int, k)
	for i := range gpus {
		gpus[i] = i
	}
	if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000}}}); err != nil {
		t.Fatal(err)
	}
}
