package frag

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestDegradedDomains(t *testing.T) {
	tests := []struct {
		name   string
		c      *topology.Cluster
		states map[string]occupancy.NodeState
		want   []Degraded
	}{
		{name: "all healthy", c: topotest.Lab16()},
		// a busy node is healthy: only states that take no new jobs count
		{name: "alloc is healthy", c: topotest.Lab16(), states: map[string]occupancy.NodeState{"node01": occupancy.StateAlloc}},
		// Lab16: two spines of two leaves of four nodes
		{name: "one down, one drained in one leaf", c: topotest.Lab16(),
			states: map[string]occupancy.NodeState{"node10": occupancy.StateDown, "node12": occupancy.StateDrain},
			want: []Degraded{{Tier: topology.TierLeaf, Domain: "leaf3", Nodes: 4, Healthy: 2, Failed: "node[10,12]"},
				{Tier: topology.TierSpine, Domain: "spine2", Nodes: 8, Healthy: 6, Failed: "node[10,12]"}}},
		// a failed tray makes its rack a smaller block, and its leaf
		// (two racks of 18) a smaller leaf
		{name: "NVL72 tray down", c: topotest.NVL72(2),
			states: map[string]occupancy.NodeState{"gb02-07": occupancy.StateDown},
			want: []Degraded{{Tier: topology.TierBlock, Domain: "rack02", Nodes: 18, Healthy: 17, Failed: "gb02-07"},
				{Tier: topology.TierLeaf, Domain: "leaf1", Nodes: 36, Healthy: 35, Failed: "gb02-07"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := occupancy.New(tt.c)
			for name, st := range tt.states {
				id, ok := tt.c.NodeByName(name)
				if !ok {
					t.Fatalf("no node %s", name)
				}
				s.SetState(id, st)
			}
			if diff := cmp.Diff(tt.want, DegradedDomains(s)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
