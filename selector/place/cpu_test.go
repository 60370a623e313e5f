package place

import (
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// cpuCluster is one leaf of two 4-GPU nodes with 64 CPUs each (g1, g2) and
// a node without GPUs (c1, 32 CPUs).
func cpuCluster() *topology.Cluster {
	g1 := topotest.SmallGPUNode("g1", "h100", 4)
	g2 := topotest.SmallGPUNode("g2", "h100", 4)
	c1 := topology.NodeSpec{Name: "c1", CPUs: 32, MemoryMiB: 1 << 20, Weight: 1}
	return topotest.MustBuild(topology.Spec{Name: "cpu", Nodes: []topology.NodeSpec{g1, g2, c1},
		Leaves: []topology.LeafSpec{{Name: "leaf1", Nodes: []string{"g1", "g2", "c1"}}}})
}

func TestPlaceCPUOnly(t *testing.T) {
	tests := []struct {
		name   string
		busy   []string // GPUs in use (each takes no CPUs here)
		req    request.Request
		status Status
		node   string
	}{
		// The engine's default mix (the Philly prior) wants 1 CPU per GPU.
		// 62 of g1's 64 CPUs would leave 2 CPUs for its 4 free GPUs: 2
		// GPUs stranded. g2 has 1 GPU free and keeps 2 CPUs for it: none
		// stranded. c1 has no GPU but only 32 CPUs.
		{"a big CPU job goes where it strands the fewest GPUs", []string{"g2:0-2"},
			request.Request{CPUMilli: 62000}, Placed, "g2"},
		// 8 CPUs strand nothing anywhere by the measure: the node with
		// the fewest GPUs left to strand (c1 has none) takes it, as a
		// later job may want more CPUs than the typical ones.
		{"a small CPU job goes where the fewest GPUs are left", nil, request.Request{CPUMilli: 8000}, Placed, "c1"},
		// g2's GPUs are all taken, like c1 it has none to strand: node order
		{"among nodes with no free GPU, node order", []string{"g2:0-3"}, request.Request{CPUMilli: 8000}, Placed, "g2"},
		// 24 CPUs fit c1 (no GPU) at no cost, and g1/g2 too at no cost
		// (40 CPUs left for 4 GPUs): order again.
		{"restricted to the CPU node by the allowed list", nil,
			request.Request{CPUMilli: 24000, Allowed: []string{"c1"}}, Placed, "c1"},
		{"more CPUs than any node has", nil, request.Request{CPUMilli: 100000}, Impossible, ""},
		{"more memory than any node has", nil, request.Request{CPUMilli: 1000, MemMiB: 8 << 20}, Impossible, ""},
		{"over two nodes is left to Slurm", nil, request.Request{CPUMilli: 2000, Nodes: 2}, Invalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cpuCluster()
			s := occupancy.New(c)
			occupy(t, s, tc.busy...)
			e := New(c, Options{})
			res := e.Place(s, tc.req)
			if res.Status != tc.status {
				t.Fatalf("status %v (%s), want %v", res.Status, res.Message, tc.status)
			}
			if tc.node == "" {
				return
			}
			na := res.Alloc.Nodes[0]
			if got := c.Nodes[na.Node].Name; got != tc.node || len(na.GPUs) != 0 || int64(na.CPUMilli) != tc.req.CPUMilli {
				t.Errorf("placed on %s with %d GPUs and %d milli-CPUs, want %s with the job's CPUs only (%s)", got, len(na.GPUs), na.CPUMilli, tc.node, res.Message)
			}
			if err := s.Allocate(res.Alloc); err != nil {
				t.Errorf("allocation does not fit: %v", err)
			}
		})
	}
}
