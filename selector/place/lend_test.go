package place

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// Lab16: four leaves of four 8-GPU nodes (leaf1 node01-04, leaf2 node05-08,
// leaf3 node09-12, leaf4 node13-16). NVL72(2): rack01 and rack02, NVLink
// blocks of 18 four-GPU trays, in one leaf.
func TestPlaceLent(t *testing.T) {
	type placed struct {
		Where  string
		Domain string
	}
	tests := []struct {
		name    string
		cluster func() *topology.Cluster
		owners  []string // held by owners' jobs
		lent    []string // held by borrowing jobs
		req     request.Request
		plain   placed // Place: no lending known
		want    placed // PlaceLent
	}{
		// no borrowed GPU anywhere: every candidate opens one leaf, the
		// fragmentation order decides as it does for Place (the hole)
		{name: "nothing lent yet: as Place", cluster: topotest.Lab16, owners: []string{"node07:0"},
			req:   request.Request{GPUs: 1},
			plain: placed{"node07:1", "node07"}, want: placed{"node07:1", "node07"}},
		// node02 has 5 free (owners hold 3), node09 6 (borrowed 2): Place
		// fills the tighter hole, on node02; PlaceLent stays in leaf3,
		// where the borrowed GPUs are
		{name: "borrowed job joins the lending leaf", cluster: topotest.Lab16,
			owners: []string{"node02:0-2"}, lent: []string{"node09:0-1"},
			req:   request.Request{GPUs: 1},
			plain: placed{"node02:3", "node02"}, want: placed{"node09:2", "node09"}},
		// leaf2 holds 2 borrowed GPUs, leaf4 6: both already lend, leaf4
		// holds more, so the 4 GPUs go there (node14, a whole node: node13
		// has only 2 free); Place fills node05's 6-GPU hole
		{name: "the fuller lending leaf wins", cluster: topotest.Lab16,
			lent:  []string{"node05:0-1", "node13:0-5"},
			req:   request.Request{GPUs: 4},
			plain: placed{"node05:4-7", "node05"}, want: placed{"node14:0-3", "node14"}},
		// leaf1 is owner-busy (20 free): Place puts the 16-GPU leaf gang
		// there (the busiest leaf that holds it); borrowed, it goes to
		// leaf3, which lends 4 GPUs already, on two of its three whole nodes
		{name: "a borrowed gang packs into the lending leaf", cluster: topotest.Lab16,
			owners: []string{"node01:all", "node02:0-3"}, lent: []string{"node10:0-3"},
			req:   request.Request{GPUs: 16, Tier: topology.TierLeaf},
			plain: placed{"node03:0-7,node04:0-7", "leaf1"}, want: placed{"node09:0-7,node11:0-7", "leaf3"}},
		// tightness first: no leaf with borrowed GPUs holds 32, so the gang
		// takes a whole leaf (opening one lending domain) rather than span
		// two leaves to join leaf3's borrowed GPU
		{name: "tightness beats packing", cluster: topotest.Lab16, lent: []string{"node09:0"},
			req:   request.Request{GPUs: 32, Tier: topology.TierLeaf, Mode: request.Preferred},
			plain: placed{"node01:0-7,node02:0-7,node03:0-7,node04:0-7", "leaf1"},
			want:  placed{"node01:0-7,node02:0-7,node03:0-7,node04:0-7", "leaf1"}},
		// with NVLink blocks the block is the lending domain: rack02 lends
		// two GPUs, so the borrowed 2-GPU job fills that tray, not the
		// owner's equal hole in rack01
		{name: "the block is the lending domain", cluster: func() *topology.Cluster { return topotest.NVL72(2) },
			owners: []string{"gb01-01:0-1"}, lent: []string{"gb02-01:0-1"},
			req:   request.Request{GPUs: 2},
			plain: placed{"gb01-01:2-3", "gb01-01"}, want: placed{"gb02-01:2-3", "gb02-01"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cluster()
			s := occupancy.New(c)
			occupy(t, s, tc.owners...)
			occupy(t, s, tc.lent...)
			lent := occupancy.New(c)
			occupy(t, lent, tc.lent...)
			var l Lending
			for n := range c.Nodes {
				l.Borrowed = append(l.Borrowed, c.Nodes[n].NumGPUs()-lent.WholeFree(topology.NodeID(n)))
			}
			e := New(c, Options{})
			where := func(res Result) placed {
				if res.Status != Placed {
					return placed{Where: res.Status.String() + ": " + res.Message}
				}
				d := c.Domains[res.Domain].Name
				if res.Tier <= topology.TierNode {
					d = c.Nodes[res.Alloc.Nodes[0].Node].Name
				}
				return placed{Describe(c, res.Alloc), d}
			}
			if diff := cmp.Diff(tc.plain, where(e.Place(s, tc.req))); diff != "" {
				t.Errorf("Place (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, where(e.PlaceLent(s, tc.req, l))); diff != "" {
				t.Errorf("PlaceLent (-want +got):\n%s", diff)
			}
			// the engine forgets the lending after the call
			if diff := cmp.Diff(tc.plain, where(e.Place(s, tc.req))); diff != "" {
				t.Errorf("Place after PlaceLent (-want +got):\n%s", diff)
			}
		})
	}
}
