package stockslurm

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// TestGPUPicks covers the index choice inside one node. DGX1 has socket
// affinity (GPUs 0-3 on NUMA 0, 4-7 on NUMA 1) and the hybrid cube mesh.
func TestGPUPicks(t *testing.T) {
	dgx1 := topotest.SingleNode(topotest.DGX1("dgx1"))
	h100 := topotest.SingleNode(topotest.DGXH100("h100"))
	pcie := topotest.SingleNode(topotest.PCIeTwoSocket("pcie"))
	cases := []struct {
		name string
		c    *topology.Cluster
		load []busy
		job  Job
		want placement
	}{{
		// Socket 0 (tie on free cores) holds 0-3; all four are taken and
		// pruned to the pair with the most links: 0-3 has 2, 0-1 and 0-2 one.
		name: "DGX-1 --gpus=2: best-linked pair on the socket",
		c:    dgx1, job: perJob(2),
		want: placement{"dgx1": {0, 3}},
	}, {
		// GPU 0 and its core are busy: socket 1 has more free cores.
		name: "DGX-1 1 GPU alternates sockets by free cores",
		c:    dgx1, load: []busy{{"dgx1", []int{0}, 0}}, job: perJob(1),
		want: placement{"dgx1": {4}},
	}, {
		// Per-node: GPU 0 first, then the GPU with most links to it (3).
		name: "DGX-1 --gres=gpu:2: first GPU, then its best link",
		c:    dgx1, job: Job{GPUsPerNode: 2, MinNodes: 1, MaxNodes: 1, CPUsPerTask: 2},
		want: placement{"dgx1": {0, 3}},
	}, {
		// All pairs have 18 links: the pruning keeps the first GPU and
		// drops the others in index order, leaving the last.
		name: "DGX H100 --gpus=2: NVSwitch ties keep the socket's first and last",
		c:    h100, job: perJob(2),
		want: placement{"h100": {0, 3}},
	}, {
		name: "no NVLink: lowest free indices on the socket",
		c:    pcie, load: []busy{{"pcie", []int{1}, 0}}, job: perJob(2),
		want: placement{"pcie": {4, 5}},
	}, {
		// 4 GPUs need both sockets of the DGX-1 once socket 0 has 2 free.
		name: "DGX-1 --gpus=4 over two sockets",
		c:    dgx1, load: []busy{{"dgx1", []int{0, 1}, 0}, {"dgx1", []int{4, 5}, 0}}, job: perJob(4),
		want: placement{"dgx1": {2, 3, 6, 7}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := occupy(t, tc.c, tc.load)
			a, ok, err := NewTree(tc.c).PlaceJob(s, &tc.job)
			if err != nil {
				t.Fatal(err)
			}
			r := &refRun{s: s}
			if diff := cmp.Diff(tc.want.String(), r.placement(a, ok).String()); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoCores: the lab's gres.conf has no Cores=, so Slurm knows no
// socket affinity there and picks the lowest free GPUs, links or not.
func TestNoCores(t *testing.T) {
	c := topotest.Lab16()
	for _, tc := range []struct {
		opts Options
		want []int
	}{
		{Options{Tree: true}, []int{0, 3}},
		{Options{Tree: true, NoCores: true}, []int{0, 1}},
	} {
		j := perJob(2)
		a, ok, err := New(c, tc.opts).PlaceJob(occupancy.New(c), &j)
		if err != nil || !ok {
			t.Fatalf("%+v: ok=%v err=%v", tc.opts, ok, err)
		}
		if diff := cmp.Diff(tc.want, a.Nodes[0].GPUs); diff != "" {
			t.Errorf("%+v: GPUs (-want +got):\n%s", tc.opts, diff)
		}
	}
}

// TestShares checks the gres/shard model of fractional requests.
func TestShares(t *testing.T) {
	c := topotest.SingleNode(fourGPU("n1"))
	s := occupancy.New(c)
	take := func(gpu int, milli uint16) {
		na := occupancy.NodeAlloc{Node: 0, GPUs: []int{gpu}, Milli: milli}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{na}}); err != nil {
			t.Fatal(err)
		}
	}
	take(0, 700) // GPU 0: 300 free
	r := &request.Request{GPUs: 1, Milli: 500, CPUMilli: 2000}
	a, ok := NewTree(c).Place(s, r)
	want := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: 0, GPUs: []int{1}, Milli: 500, CPUMilli: 2000}}}
	if diff := cmp.Diff(want, a); !ok || diff != "" {
		t.Fatalf("500 milli with GPU 0 at 300 free: ok=%v (-want +got):\n%s", ok, diff)
	}
	r.Milli = 300 // fits GPU 0 exactly: the first GPU with room
	a, ok = NewTree(c).Place(s, r)
	if !ok || a.Nodes[0].GPUs[0] != 0 {
		t.Errorf("300 milli: got %+v ok=%v, want GPU 0", a, ok)
	}
}

func TestFromRequest(t *testing.T) {
	cases := []struct {
		name     string
		r        request.Request
		switches bool
		want     Job
	}{{
		name: "--gpus=G with CPUs per GPU rounded up",
		r:    request.Request{GPUs: 16, CPUMilli: 24000},
		want: Job{GPUsPerJob: 16, CPUsPerGPU: 2, CPUsPerTask: 1, CPUMilli: 24000},
	}, {
		name: "-N n --gpus-per-node=g",
		r:    request.Request{GPUs: 16, Nodes: 2, GPUsPerNode: 8},
		want: Job{GPUsPerNode: 8, MinNodes: 2, MaxNodes: 2, CPUsPerTask: 1},
	}, {
		name: "-N n --gpus=G",
		r:    request.Request{GPUs: 6, Nodes: 2},
		want: Job{GPUsPerJob: 6, MinNodes: 2, MaxNodes: 2, CPUsPerTask: 1},
	}, {
		name: "a share is one shard on one node",
		r:    request.Request{GPUs: 1, Milli: 250, MemMiB: 100},
		want: Job{Share: 250, GPUsPerNode: 1, MinNodes: 1, MaxNodes: 1, CPUsPerTask: 1, MemMiB: 100},
	}, {
		name: "CPU-only job",
		r:    request.Request{CPUMilli: 3500},
		want: Job{MinNodes: 1, MaxNodes: 1, CPUsPerTask: 4, CPUMilli: 3500},
	}, {
		name:     "leaf:required becomes --switches=1 when asked",
		r:        request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Required},
		switches: true,
		want:     Job{GPUsPerJob: 32, CPUsPerTask: 1, Switches: 1},
	}, {
		name: "the tier is ignored by default",
		r:    request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Required},
		want: Job{GPUsPerJob: 32, CPUsPerTask: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromRequest(&tc.r, tc.switches)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
		})
	}
	for _, r := range []request.Request{{GPUs: -1}, {GPUs: 12, GPUsPerNode: 8}} {
		if _, err := FromRequest(&r, false); err == nil {
			t.Errorf("request %+v: no error", r)
		}
	}
}
