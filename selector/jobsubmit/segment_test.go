package jobsubmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// blockFixture is a decider over topotest.GB200Lab(4, 4) (gb01..gb16, 4
// GPUs each, rack1 = gb01-04 ... rack4 = gb13-16, all in leaf1) with
// slurm_topology: block when slurmBlock, and a snapshot in which the
// nodes named in busy are wholly in use.
func blockFixture(t *testing.T, slurmBlock bool, busy ...string) (*Decider, *occupancy.Snapshot) {
	t.Helper()
	c := topotest.GB200Lab(4, 4)
	p := DefaultPolicy()
	p.Jobs, p.SlurmBlock = ScopeGPU, slurmBlock
	d, err := New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(c)
	for _, name := range busy {
		id, _ := c.NodeByName(name)
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: []int{0, 1, 2, 3}, Milli: 1000}}}); err != nil {
			t.Fatal(err)
		}
	}
	return d, s
}

// segmented is the part of a Result these tests compare.
type segmented struct {
	Verdict             Verdict
	Features, Shape     string
	MinNodes, Segment   uint32
	DecisionSegment     int
	Domain, TresPerNode string
}

func TestSegment(t *testing.T) {
	tests := []struct {
		name       string
		slurmBlock bool
		busy       []string
		job        Job
		want       segmented
	}{{
		// racks 1 and 2 have 2 whole trays each: 32 GPUs in slices of 8
		// (2 trays) take both and 4 trays of rack3 (span.go), 8 x 4; each
		// 2-tray slice is a Slurm segment
		name: "slice of 8 on 4-GPU trays is --segment=2", slurmBlock: true,
		busy: []string{"gb01", "gb02", "gb05", "gb06"},
		job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf,slice=8"},
		want: segmented{Verdict: VerdictPlaced, Features: "gt_leaf1", Shape: "8x4", MinNodes: 8, Segment: 2, DecisionSegment: 2,
			Domain: "leaf1", TresPerNode: "gres:gpu:4"},
	}, {
		name: "without slurm_topology: block the shape only",
		busy: []string{"gb01", "gb02", "gb05", "gb06"},
		job:  Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf,slice=8"},
		want: segmented{Verdict: VerdictPlaced, Features: "gt_leaf1", Shape: "8x4", MinNodes: 8, Domain: "leaf1", TresPerNode: "gres:gpu:4"},
	}, {
		// a 16-GPU NVLink gang is one rack of 4 trays: one segment of 4;
		// rack1 (3 free trays) cannot hold it now: the engine takes rack2
		// and the binding lists rack1 last (it could some day)
		name: "nvlink gang is one segment", slurmBlock: true,
		busy: []string{"gb01"},
		job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "nvlink"},
		want: segmented{Verdict: VerdictPlaced, Features: "[gt_rack2|gt_rack3|gt_rack4|gt_rack1]", Shape: "4x4", MinNodes: 4, Segment: 4, DecisionSegment: 4,
			Domain: "rack2", TresPerNode: "gres:gpu:4"},
	}, {
		// every rack has 2 busy trays: a 16-GPU slice (a whole rack) has
		// no room; the waiting job still gets the shape and the segment
		name: "waiting slice job gets shape and segment", slurmBlock: true,
		busy: []string{"gb01", "gb02", "gb05", "gb06", "gb09", "gb10", "gb13", "gb14"},
		job:  Job{TresPerJob: "gres:gpu:16", GangTopology: "leaf,slice=16"},
		want: segmented{Verdict: VerdictWaiting, Features: "gt_leaf1", Shape: "4x4", MinNodes: 4, Segment: 4, DecisionSegment: 4,
			TresPerNode: "gres:gpu:4"},
	}, {
		name: "the user's own --segment is kept", slurmBlock: true,
		job: Job{TresPerJob: "gres:gpu:16", GangTopology: "nvlink", SegmentSize: 2},
		want: segmented{Verdict: VerdictPlaced, Features: "[gt_rack1|gt_rack2|gt_rack3|gt_rack4]", Shape: "4x4", MinNodes: 4,
			Domain: "rack1", TresPerNode: "gres:gpu:4"},
	}, {
		name: "one-node job: no segment", slurmBlock: true,
		job:  Job{TresPerJob: "gres:gpu:4", GangTopology: "nvlink"},
		want: segmented{Verdict: VerdictPlaced, Features: "[gt_rack1|gt_rack2|gt_rack3|gt_rack4]", Domain: "gb01/nvl0", TresPerNode: u},
	}, {
		// --gpus=16 -N 4 leaves Slurm free to put 16 GPUs unevenly on 4
		// nodes: no fixed GPUs per node, no segment
		name: "no segment without GPUs per node", slurmBlock: true,
		job:  Job{TresPerJob: "gres:gpu:16", MinNodes: 4, MaxNodes: 4, GangTopology: "nvlink"},
		want: segmented{Verdict: VerdictPlaced, Features: "[gt_rack1|gt_rack2|gt_rack3|gt_rack4]", Domain: "rack1", TresPerNode: u},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := blockFixture(t, tc.slurmBlock, tc.busy...)
			res, err := d.Decide(tc.job, s, 7, place.New(d.Cluster(), place.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			str := func(p *string) string {
				if p == nil {
					return u
				}
				return *p
			}
			got := segmented{Verdict: res.Decision.Verdict, Features: str(res.Features), Shape: res.Decision.Shape,
				MinNodes: res.MinNodes, Segment: res.SegmentSize, DecisionSegment: res.Decision.Segment,
				Domain: res.Decision.Domain, TresPerNode: str(res.TresPerNode)}
			if got.Features == u {
				got.Features = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rewrite (-want +got):\n%s\n%s", diff, res.Decision)
			}
		})
	}
}
