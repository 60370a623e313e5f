package place

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// TestSpanningSlices places slices larger than a node on the GB200-like
// lab cluster: 4 racks (NVLink blocks) of 4 trays with 4 GPUs, one leaf.
func TestSpanningSlices(t *testing.T) {
	lab := func() *topology.Cluster { return topotest.GB200Lab(4, 4) }
	tests := []struct {
		name   string
		busy   []string
		req    request.Request
		want   string // Describe(alloc)
		domain string
		msg    string // for a refusal: part of the message
	}{{
		// slice=16 is a whole rack of 4 trays: 32 GPUs are two racks, the
		// first two in tree order on an empty cluster
		name: "two racks of one slice each",
		req:  request.Request{GPUs: 32, Slice: 16, Tier: topology.TierLeaf},
		want: "gb01:0-3,gb02:0-3,gb03:0-3,gb04:0-3,gb05:0-3,gb06:0-3,gb07:0-3,gb08:0-3", domain: "leaf1",
	}, {
		// racks 1 and 2 have 2 whole trays each (one slice of 2 trays):
		// 32 GPUs in slices of 8 take those two slices and 2 of rack3,
		// so rack4 stays whole (largest-first would take racks 3 and 4)
		name: "partly used racks fill first",
		busy: []string{"gb01:all", "gb02:all", "gb05:all", "gb06:all"},
		req:  request.Request{GPUs: 32, Slice: 8, Tier: topology.TierLeaf},
		want: "gb03:0-3,gb04:0-3,gb07:0-3,gb08:0-3,gb09:0-3,gb10:0-3,gb11:0-3,gb12:0-3", domain: "leaf1",
	}, {
		// rack1 has 3 whole trays: one slice of 2 (the third tray cannot
		// hold half a slice); 3 slices need racks 1, then 2 whole from
		// rack2 (16 GPUs: the smallest rack holding the rest)
		name: "only whole slices count in a block",
		busy: []string{"gb01:all"},
		req:  request.Request{GPUs: 24, Slice: 8, Tier: topology.TierLeaf},
		want: "gb02:0-3,gb03:0-3,gb05:0-3,gb06:0-3,gb07:0-3,gb08:0-3", domain: "leaf1",
	}, {
		// one slice fits a rack: the block tier is tried first
		name: "one slice stays in one rack",
		req:  request.Request{GPUs: 16, Slice: 16, Tier: topology.TierLeaf},
		want: "gb01:0-3,gb02:0-3,gb03:0-3,gb04:0-3", domain: "rack1",
	}, {
		// 4 x 2 GPUs, slice=4 (2 trays): rack1's trays each have 2 free
		// GPUs; the slices fill those halves instead of breaking rack2
		name: "fixed shape fills half-used trays",
		busy: []string{"gb01:0-1", "gb02:0-1", "gb03:0-1", "gb04:0-1"},
		req:  request.Request{GPUs: 8, Nodes: 4, GPUsPerNode: 2, Slice: 4, Tier: topology.TierLeaf},
		want: "gb01:2-3,gb02:2-3,gb03:2-3,gb04:2-3", domain: "rack1",
	}, {
		name: "a slice of part of a tray is refused",
		req:  request.Request{GPUs: 12, Slice: 6, Tier: topology.TierLeaf},
		msg:  "slice=6 spans nodes of the NVLink blocks, so it must be a whole number of nodes of 4 GPUs",
	}, {
		name: "a slice larger than a rack never fits",
		req:  request.Request{GPUs: 32, Slice: 32, Tier: topology.TierLeaf},
		msg:  "can never fit",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := lab()
			s := occupancy.New(c)
			occupy(t, s, tc.busy...)
			res := New(c, Options{}).Place(s, tc.req)
			if tc.msg != "" {
				if res.Status == Placed || !strings.Contains(res.Message, tc.msg) {
					t.Fatalf("status %v, message %q; want a refusal containing %q", res.Status, res.Message, tc.msg)
				}
				return
			}
			if res.Status != Placed {
				t.Fatalf("status = %v (%s), want placed", res.Status, res.Message)
			}
			if diff := cmp.Diff(tc.want, Describe(c, res.Alloc)); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
			if got := c.Domains[res.Domain].Name; got != tc.domain {
				t.Errorf("domain = %s, want %s", got, tc.domain)
			}
			checkSlices(t, c, res.Alloc, tc.req.Slice)
		})
	}
}

// checkSlices checks the rule itself: every block holds a whole number of
// slices of the gang.
func checkSlices(t *testing.T, c *topology.Cluster, a occupancy.Allocation, slice int) {
	t.Helper()
	per := map[topology.DomainID]int{}
	for _, na := range a.Nodes {
		per[c.Nodes[na.Node].Up[topology.TierBlock]] += len(na.GPUs)
	}
	for b, g := range per {
		if g%slice != 0 {
			t.Errorf("block %s holds %d GPUs of the gang, not a whole number of slices of %d", c.Domains[b].Name, g, slice)
		}
	}
}
