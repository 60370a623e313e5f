package place

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// What Slurm's --exclusive, --mem=0 and --gpus-per-task ask of the
// engine, on Lab16 (16 nodes of 8 GPUs, 64 CPUs, 1,000,000 MiB): node01
// has GPU 0 taken, node02 one CPU, node03 1 MiB of memory; the rest idle.
func TestWholeNodesAndAllMemory(t *testing.T) {
	tests := []struct {
		name   string
		req    request.Request
		status Status
		node   string // where it goes
		cpus   int32  // the milli-CPUs its allocation holds there
	}{
		// node01's hole is where a 1-GPU job fits best...
		{"1 GPU fills a hole", request.Request{GPUs: 1, CPUMilli: 1000}, Placed, "node01", 1000},
		// ...but --exclusive takes a node whole: node01 (a GPU), node02
		// (a CPU) and node03 (memory counts only for --mem=0) are not
		// idle; node03 is
		{"1 GPU --exclusive takes an idle node", request.Request{GPUs: 1, CPUMilli: 1000, WholeNodes: true}, Placed, "node03", 1000},
		{"--mem=0 needs all of a node's memory", request.Request{GPUs: 1, CPUMilli: 1000, AllMemory: true}, Placed, "node01", 1000},
		{"--exclusive --mem=0", request.Request{GPUs: 1, CPUMilli: 1000, WholeNodes: true, AllMemory: true}, Placed, "node04", 1000},
		// a CPU-only job goes where it strands the fewest GPUs (node01's
		// 7); --exclusive holds every CPU of the idle node it takes
		{"CPU-only", request.Request{CPUMilli: 1000}, Placed, "node01", 1000},
		{"CPU-only --exclusive", request.Request{CPUMilli: 1000, WholeNodes: true}, Placed, "node03", 64000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.Lab16()
			s := occupancy.New(c)
			occupy(t, s, "node01:0")
			n02, _ := c.NodeByName("node02")
			n03, _ := c.NodeByName("node03")
			must(t, s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n02, CPUMilli: 1000}, {Node: n03, MemMiB: 1}}}))
			res := New(c, Options{}).Place(s, tc.req)
			if res.Status != tc.status {
				t.Fatalf("status %v (%s), want %v", res.Status, res.Message, tc.status)
			}
			na := res.Alloc.Nodes[0]
			if got := c.Nodes[na.Node].Name; got != tc.node || na.CPUMilli != tc.cpus {
				t.Errorf("on %s holding %d milli-CPUs, want %s holding %d (%s)", got, na.CPUMilli, tc.node, tc.cpus, res.Message)
			}
		})
	}
}

// A busy cluster makes a whole-node job wait, never impossible.
func TestWholeNodesWaitWhenNoneIsIdle(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	for i := range c.Nodes {
		occupy(t, s, c.Nodes[i].Name+":0")
	}
	for _, req := range []request.Request{{GPUs: 1, CPUMilli: 1000, WholeNodes: true}, {CPUMilli: 1000, WholeNodes: true}} {
		if res := New(c, Options{}).Place(s, req); res.Status != NoFit {
			t.Errorf("%+v: %v (%s), want NoFit", req, res.Status, res.Message)
		}
	}
}

// --gpus-per-task: every node takes whole tasks. 9 GPUs are 8+1 as a free
// gang, 6+3 as three tasks of 3; 12 GPUs in tasks of 4 are 8+4.
func TestTaskGPUsWholePerNode(t *testing.T) {
	tests := []struct {
		name string
		req  request.Request
		want []int // GPUs per node, most first
	}{
		{"9 GPUs", request.Request{GPUs: 9, CPUMilli: 1000}, []int{8, 1}},
		{"3 tasks of 3 GPUs", request.Request{GPUs: 9, CPUMilli: 3000, TaskGPUs: 3}, []int{6, 3}},
		{"3 tasks of 4 GPUs", request.Request{GPUs: 12, CPUMilli: 3000, TaskGPUs: 4}, []int{8, 4}},
		// (-N 2 with 3 tasks of 2 GPUs has no even split in whole tasks:
		// the engine places a fixed node count evenly only, and jobsubmit
		// leaves such a job to Slurm, unevenSplit)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.Lab16()
			res := New(c, Options{}).Place(occupancy.New(c), tc.req)
			if res.Status != Placed {
				t.Fatalf("%v: %s", res.Status, res.Message)
			}
			var got []int
			for _, na := range res.Alloc.Nodes {
				got = append(got, len(na.GPUs))
			}
			slices.SortFunc(got, func(a, b int) int { return b - a })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GPUs per node (-want +got):\n%s", diff)
			}
		})
	}
}

// Result.Limit tells CPUs and memory (counts the caller may know to be
// upper bounds) from GPUs, shape and tier as what rules a request out.
func TestImpossibleLimit(t *testing.T) {
	tests := []struct {
		name string
		req  request.Request
		want Reason
	}{
		// 65 CPUs for one GPU: no node has more than 64
		{"CPUs per GPU", request.Request{GPUs: 1, CPUMilli: 65000}, ReasonCPU},
		// 2,000,000 MiB for one GPU: a node has 1,000,000
		{"memory per GPU", request.Request{GPUs: 1, CPUMilli: 1000, MemMiB: 2000000}, ReasonMemory},
		{"CPU-only, CPUs", request.Request{CPUMilli: 65000}, ReasonCPU},
		{"CPU-only, memory", request.Request{CPUMilli: 1000, MemMiB: 2000000}, ReasonMemory},
		// 9 GPUs on one node of 8: the GPUs themselves
		{"GPUs", request.Request{GPUs: 9, Nodes: 1, CPUMilli: 1000}, ""},
		{"GPUs and CPUs: the GPUs", request.Request{GPUs: 9, Nodes: 1, CPUMilli: 900000}, ""},
		{"tier", request.Request{GPUs: 64, CPUMilli: 1000, Tier: topology.TierLeaf, Mode: request.Required}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.Lab16()
			res := New(c, Options{}).Place(occupancy.New(c), tc.req)
			if res.Status != Impossible || res.Limit != tc.want {
				t.Errorf("%v, limit %q (%s); want impossible, limit %q", res.Status, res.Limit, res.Message, tc.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
