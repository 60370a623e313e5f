package frag

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// A learned workload survives the trip through the snapshot's mix, and a
// mix that does not fit the cluster is refused with the reason.
func TestMixRoundTrip(t *testing.T) {
	c := topotest.Lab16()
	h100, _ := c.ModelByName("h100")
	w := Workload{
		Node:  []NodeShape{{GPUs: 1, Milli: 500, CPUMilli: 4000, Models: topology.ModelSet(0).With(h100), Weight: 0.7}},
		Gangs: []GangShape{{Nodes: 4, Tier: topology.TierLeaf, Weight: 0.3}},
	}
	got, err := MixWorkload(c, WorkloadMix(c, w, 250))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		mix  *occupancy.Mix
		want string
	}{
		{nil, "no mix"},
		{&occupancy.Mix{Node: []occupancy.MixShape{{GPUs: 1, Milli: 1000, Models: []string{"tpu"}, Weight: 1}}}, `GPU model "tpu" is not in cluster lab16`},
		{&occupancy.Mix{Gangs: []occupancy.MixGang{{Nodes: 2, Tier: "rack", Weight: 1}}}, "mix gang 0"},
		{&occupancy.Mix{Node: []occupancy.MixShape{{GPUs: 1, Milli: 1200, Weight: 1}}}, "is not a shape"},
		{&occupancy.Mix{}, "no shapes with positive weight"},
	} {
		if _, err := MixWorkload(c, tc.mix); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mix %+v: %v, want an error with %q", tc.mix, err, tc.want)
		}
	}
}
