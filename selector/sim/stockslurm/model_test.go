package stockslurm

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// fourGPU is a node with 4 GPUs, 64 CPUs and no socket affinity or NVLink.
func fourGPU(name string) topology.NodeSpec { return topotest.SmallGPUNode(name, "a100", 4) }

// tree8 is 2 spines x 2 leaves x 2 nodes: leaf01 = node1-2, leaf02 =
// node3-4 (spine1), leaf03 = node5-6, leaf04 = node7-8 (spine2).
func tree8() *topology.Cluster { return topotest.FatTree(2, 2, 2, fourGPU) }

// busy takes GPUs on a node, one CPU each plus extra CPUs.
type busy struct {
	node  string
	gpus  []int
	extra int
}

func occupy(t *testing.T, c *topology.Cluster, load []busy, down ...string) *occupancy.Snapshot {
	t.Helper()
	s := occupancy.New(c)
	for _, b := range load {
		id, ok := c.NodeByName(b.node)
		if !ok {
			t.Fatalf("no node %s", b.node)
		}
		na := occupancy.NodeAlloc{Node: id, GPUs: b.gpus, CPUMilli: int32(1000 * (len(b.gpus) + b.extra))}
		if len(b.gpus) > 0 {
			na.Milli = occupancy.WholeGPU
		}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{na}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range down {
		id, _ := c.NodeByName(name)
		s.SetState(id, occupancy.StateDrain)
	}
	return s
}

// perJob is --gpus=G --cpus-per-gpu=1; perNode is -N n --gpus-per-node=g.
func perJob(g int) Job { return Job{GPUsPerJob: g, CPUsPerGPU: 1, CPUMilli: int64(g) * 1000} }

func perNode(n, g int) Job {
	return Job{GPUsPerNode: g, MinNodes: n, MaxNodes: n, CPUsPerGPU: 1, CPUMilli: int64(n*g) * 1000}
}

type placeCase struct {
	name string
	load []busy
	down []string
	job  Job
	want placement // nil: pending
}

func runPlaceCases(t *testing.T, c *topology.Cluster, opts Options, cases []placeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := occupy(t, c, tc.load, tc.down...)
			m := New(c, opts)
			a, ok, err := m.PlaceJob(s, &tc.job)
			if err != nil {
				t.Fatal(err)
			}
			r := &refRun{s: s}
			if diff := cmp.Diff(tc.want.String(), r.placement(a, ok).String()); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
			if ok {
				if err := s.Allocate(a); err != nil {
					t.Errorf("allocation does not apply: %v", err)
				}
			}
		})
	}
}

func TestPlaceTree(t *testing.T) {
	full := []int{0, 1, 2, 3}
	runPlaceCases(t, tree8(), Options{Tree: true}, []placeCase{{
		// leaf01 has two nodes with a free GPU, leaf02 only node4: the
		// tightest leaf by node count wins, not global first fit (node1).
		name: "1 GPU goes to the leaf with the fewest candidate nodes",
		load: []busy{{"node1", []int{0, 1, 2}, 0}, {"node3", full, 0}},
		job:  perJob(1),
		want: placement{"node4": {0}},
	}, {
		// near_gpu_cnt = min(free, 2): node1 (1 free) is heavier than the
		// nodes with 2+ free; of those leaf01 holds one (node2), leaf02 two.
		name: "2 GPUs: only nodes with 2 free count, then the tightest leaf",
		load: []busy{{"node1", []int{0, 1, 2}, 0}, {"node3", []int{0, 1}, 0}, {"node4", []int{0, 1}, 0}},
		job:  perJob(2),
		want: placement{"node2": {0, 1}},
	}, {
		// --gpus=8 asks for one node at least, so every leaf "fits" and
		// leaf02 (one free node) is tightest; node4's 4 GPUs are not enough,
		// so the nearest leaf at equal distance (leaf03 before leaf04) adds node5.
		name: "--gpus=8 spans leaves: fewest-node leaf first",
		load: []busy{{"node1", full, 0}, {"node2", full, 0}, {"node3", full, 0}},
		job:  perJob(8),
		want: placement{"node4": {0, 1, 2, 3}, "node5": {0, 1, 2, 3}},
	}, {
		// -N 2 needs two nodes: leaf02 (one free node) does not fit, leaf03 does.
		name: "-N 2 --gpus-per-node=4 stays in one leaf",
		load: []busy{{"node1", full, 0}, {"node2", full, 0}, {"node3", full, 0}},
		job:  perNode(2, 4),
		want: placement{"node5": {0, 1, 2, 3}, "node6": {0, 1, 2, 3}},
	}, {
		name: "--switches=1 waits when the pick spans two leaves",
		load: []busy{{"node1", full, 0}, {"node2", full, 0}, {"node3", full, 0}},
		job:  Job{GPUsPerJob: 8, CPUsPerGPU: 1, Switches: 1},
		want: nil,
	}, {
		// Only node8 has 4 free (the lightest group, 4 < 6 GPUs), so it is
		// forced in; its leaf is filled next: node7 adds 2 of its 3 free.
		name: "a lighter group too small for the job is forced into it",
		load: []busy{{"node1", []int{0}, 0}, {"node2", []int{0}, 0}, {"node3", []int{0}, 0},
			{"node4", []int{0}, 0}, {"node5", []int{0}, 0}, {"node6", []int{0}, 0}, {"node7", []int{0}, 0}},
		job:  perJob(6),
		want: placement{"node7": {1, 2}, "node8": {0, 1, 2, 3}},
	}, {
		name: "drained nodes are not candidates",
		load: []busy{{"node1", full, 0}, {"node2", full, 0}},
		down: []string{"node4"},
		job:  perJob(1),
		want: placement{"node3": {0}},
	}, {
		name: "more GPUs than are free: pending",
		load: []busy{{"node1", full, 0}},
		job:  perJob(29),
		want: nil,
	}})
}

func flat8() *topology.Cluster { return topotest.FatTree(0, 1, 8, fourGPU) }

func TestPlaceFlat(t *testing.T) {
	runPlaceCases(t, flat8(), Options{}, []placeCase{{
		// node3 drained splits the nodes into runs node1-2 (128 CPUs) and
		// node4-8 (320): the smaller sufficient run wins, and in it the node
		// with the fewest free CPUs (node2, 2 GPUs and 2 CPUs busy).
		name: "1 GPU: smallest sufficient run by CPUs, then fewest free CPUs",
		load: []busy{{"node2", []int{0, 1}, 0}},
		down: []string{"node3"},
		job:  perJob(1),
		want: placement{"node2": {2}},
	}, {
		// All nodes weigh the same for 2 GPUs; node5 has 24 free CPUs, the
		// fewest of the nodes that hold 2 GPUs.
		name: "2 GPUs: best fit by free CPUs inside the run",
		load: []busy{{"node5", []int{0}, 39}},
		job:  perJob(2),
		want: placement{"node5": {1, 2}},
	}, {
		// For 4 GPUs node1 (2 free) is heavier and ends its own run; the
		// run of whole-free nodes is lighter and wins.
		name: "4 GPUs: nodes with more free GPUs are lighter",
		load: []busy{{"node1", []int{0, 1}, 0}},
		job:  perJob(4),
		want: placement{"node2": {0, 1, 2, 3}},
	}, {
		name: "--gpus=8 takes the run's nodes in order",
		job:  perJob(8),
		want: placement{"node1": {0, 1, 2, 3}, "node2": {0, 1, 2, 3}},
	}, {
		name: "-N 3 --gpus-per-node=2 skips nodes with fewer than 2 free",
		load: []busy{{"node1", []int{0, 1, 2}, 0}},
		job:  perNode(3, 2),
		want: placement{"node2": {0, 1}, "node3": {0, 1}, "node4": {0, 1}},
	}})
}

func TestName(t *testing.T) {
	c := tree8()
	if got := NewTree(c).Name(); got != "slurm" {
		t.Errorf("NewTree name = %q, want slurm", got)
	}
	if got := NewFlat(c).Name(); got != "slurm-flat" {
		t.Errorf("NewFlat name = %q, want slurm-flat", got)
	}
}

func TestPlaceJobErrors(t *testing.T) {
	c := tree8()
	m := NewTree(c)
	if _, _, err := m.PlaceJob(occupancy.New(flat8()), &Job{GPUsPerJob: 1}); err == nil {
		t.Error("snapshot of another cluster: no error")
	}
	for _, j := range []Job{
		{GPUsPerJob: 2, GPUsPerNode: 2},
		{GPUsPerJob: -1},
		{GPUsPerNode: 2, MinNodes: 3, MaxNodes: 2},
		{Share: 1200, GPUsPerNode: 1},
		{Share: 500, GPUsPerNode: 1, MinNodes: 2},
	} {
		if _, _, err := m.PlaceJob(occupancy.New(c), &j); err == nil {
			t.Errorf("job %+v: no error", j)
		}
	}
}
