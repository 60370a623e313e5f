package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// firstFit is a test policy: the lowest free GPUs in node order, on usable
// nodes. Simple enough to check the queue by hand.
type firstFit struct{}

func (firstFit) Name() string { return "first-fit" }

func (firstFit) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	var a occupancy.Allocation
	need := r.GPUs
	for n := range s.Cluster.Nodes {
		id := topology.NodeID(n)
		if need == 0 {
			break
		}
		if !s.State[id].Usable() {
			continue
		}
		var gpus []int
		for g, m := range s.NodeFree(id) {
			if m == occupancy.WholeGPU && len(gpus) < need {
				gpus = append(gpus, g)
			}
		}
		if len(gpus) > 0 {
			a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: id, GPUs: gpus, Milli: occupancy.WholeGPU, CPUMilli: int32(len(gpus)) * 1000})
			need -= len(gpus)
		}
	}
	return a, need == 0
}

// outcome is the part of an Outcome the scenario tests check.
type outcome struct {
	Start, End float64
	Backfilled bool
	Tier       topology.Tier
}

func outcomes(r *Result) []outcome {
	out := make([]outcome, len(r.Outcomes))
	for i, o := range r.Outcomes {
		out[i] = outcome{o.Start, o.End, o.Backfilled, o.Tier}
	}
	return out
}

func TestReplayQueue(t *testing.T) {
	leaf := topology.TierLeaf
	nvl := topology.TierNVLink
	tests := []struct {
		name  string
		nodes int // one leaf of this many DGX H100; default 2
		jobs  []Job
		want  []outcome
	}{{
		name: "FIFO: a job behind a blocked one waits when it would delay it",
		// a holds node 1 until 100; b (16) is blocked until 100; c (8 GPUs,
		// 200 s) would still run at 100 and the reservation takes both
		// nodes, so c waits for b (which ends at 100 + 10*1.2 = 112).
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "b", Submit: 1, Duration: 10, GPUs: 16}, {Name: "c", Submit: 2, Duration: 200, GPUs: 8}},
		want: []outcome{{0, 100, false, nvl}, {100, 112, false, leaf}, {112, 312, false, nvl}},
	}, {
		name: "backfill: a short job that ends before the reservation starts at once",
		// c ends at 2 + 50 = 52 <= 100: it runs on node 2 meanwhile.
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "b", Submit: 1, Duration: 10, GPUs: 16}, {Name: "c", Submit: 2, Duration: 50, GPUs: 8}},
		want: []outcome{{0, 100, false, nvl}, {100, 112, false, leaf}, {2, 52, true, nvl}},
	}, {
		name: "backfill outside the reserved nodes",
		// Three nodes. a holds node 1 until 100, y node 2 until 50, x half
		// of node 3 for long. d (16) is blocked; its reservation is nodes 1
		// and 2 at 100 (first fit once a and y are gone). e (4 GPUs, 500 s)
		// would still run at 100 but fits node 3, away from the
		// reservation, so it starts at once; f (same shape) then finds no
		// room outside the reserved nodes and waits until d is done
		// (100 + 10*1.2); g (1 GPU, 20 s, submitted after y ended) ends
		// before 100 and may use a reserved node meanwhile.
		nodes: 3,
		jobs: []Job{{Name: "a", Submit: 0, Duration: 100, GPUs: 8}, {Name: "y", Submit: 0, Duration: 50, GPUs: 8}, {Name: "x", Submit: 0, Duration: 1000, GPUs: 4}, {Name: "d", Submit: 1, Duration: 10, GPUs: 16},
			{Name: "e", Submit: 2, Duration: 500, GPUs: 4}, {Name: "f", Submit: 3, Duration: 500, GPUs: 4}, {Name: "g", Submit: 60, Duration: 20, GPUs: 1}},
		want: []outcome{{0, 100, false, nvl}, {0, 50, false, nvl}, {0, 1000, false, nvl}, {100, 112, false, leaf},
			{2, 502, true, nvl}, {112, 612, false, nvl}, {60, 80, true, nvl}},
	}, {
		name: "everything fits: nobody waits",
		jobs: []Job{{Name: "a", Submit: 0, Duration: 10, GPUs: 1}, {Name: "b", Submit: 0, Duration: 10, GPUs: 2}, {Name: "c", Submit: 5, Duration: 10, GPUs: 4}, {Name: "d", Submit: 6, Duration: 10, GPUs: 8}},
		// d takes node 1's last GPU and 7 of node 2: leaf, one node more
		// than needed: 10 * 1.2 * (1 + 0.05) = 12.6 s.
		want: []outcome{{0, 10, false, nvl}, {0, 10, false, nvl}, {5, 15, false, nvl}, {6, 18.6, false, leaf}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.FatTree(0, 1, max(tc.nodes, 2), topotest.DGXH100)
			res, err := Replay(c, tc.jobs, firstFit{}, Config{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, outcomes(res), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}
