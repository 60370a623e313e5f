package request

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestParseOption(t *testing.T) {
	tests := []struct {
		in   string
		want Option
	}{
		{"leaf", Option{Tier: topology.TierLeaf}},
		{"nvlink:preferred", Option{Tier: topology.TierNVLink, Mode: Preferred}},
		{"LEAF:Required,slice=8", Option{Tier: topology.TierLeaf, Slice: 8}},
		{"any, slice=4", Option{Tier: topology.TierCluster, Slice: 4}},
		{"spine:preferred,slice=72", Option{Tier: topology.TierSpine, Mode: Preferred, Slice: 72}},
	}
	for _, tc := range tests {
		got, err := ParseOption(tc.in)
		if err != nil {
			t.Errorf("ParseOption(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseOption(%q) (-want +got):\n%s", tc.in, diff)
		}
		if again, err := ParseOption(got.String()); err != nil || again != got {
			t.Errorf("canonical form %q does not round-trip: %v %v", got.String(), again, err)
		}
	}
}

func TestParseOptionErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty value"},
		{"nvlnk", `unknown tier "nvlnk" (want one of nvlink, node, block, leaf, spine, any)`},
		{"leaf:sometimes", `unknown mode "sometimes" (want required or preferred)`},
		{"leaf,slice=0", `slice="0" is not a GPU count (want 1..576)`},
		{"leaf,slice=x", `slice="x" is not a GPU count`},
		{"leaf,slices=8", `unknown setting "slices=8" (the only setting is slice=S)`},
		{"leaf,slice=8,slice=4", "slice given twice"},
	}
	for _, tc := range tests {
		_, err := ParseOption(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseOption(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		r    Request
		want string // "" for valid
	}{
		{"whole gpus", Request{GPUs: 16, Tier: topology.TierLeaf}, ""},
		{"share", Request{GPUs: 1, Milli: 250}, ""},
		{"cpu only", Request{CPUMilli: 4000}, ""},
		{"shape", Request{GPUs: 16, Nodes: 2, GPUsPerNode: 8, Slice: 8}, ""},
		{"share on two gpus", Request{GPUs: 2, Milli: 500}, "needs exactly one GPU"},
		{"shape mismatch", Request{GPUs: 12, Nodes: 2, GPUsPerNode: 8}, "2 nodes x 8 GPUs per node is 16 GPUs, but 12"},
		{"slice does not divide", Request{GPUs: 12, Slice: 8}, "slice=8 does not divide the 12 GPUs"},
		// 6 neither divides 4 nor is a whole number of 4-GPU nodes; 8 would
		// be two nodes of an NVLink block (the engine checks the cluster)
		{"slice vs per node", Request{GPUs: 12, GPUsPerNode: 4, Slice: 6}, "slice=6 does not divide the 4 GPUs per node, nor is it a whole number of such nodes"},
		{"more nodes than gpus", Request{GPUs: 2, Nodes: 3}, "leaves a node without a GPU"},
		// 16 / 3 = 5 rem 1: 5 nodes give 15, 6 give 18 (Slurm refuses it too)
		{"per node does not divide", Request{GPUs: 16, GPUsPerNode: 3},
			"16 GPUs with 3 GPUs per node is not a whole number of nodes (5 nodes hold 15, 6 nodes hold 18): ask for a multiple of 3 GPUs, or leave out --gpus-per-node"},
		{"per node above the total", Request{GPUs: 2, GPUsPerNode: 3}, "(1 node holds 3)"},
		{"per node divides", Request{GPUs: 6, GPUsPerNode: 3}, ""},
		{"nothing", Request{}, "asks for no GPUs and no CPUs"},
		{"negative", Request{GPUs: -1}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseOption(f *testing.F) {
	for _, s := range []string{"leaf", "nvlink:preferred,slice=8", "any,slice=1", "block:required"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOption(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if o.Tier < topology.TierNVLink || o.Tier > topology.TierCluster || o.Slice < 0 || o.Slice > MaxSlice {
			t.Fatalf("ParseOption(%q) = %+v: out of range", s, o)
		}
		back, err := ParseOption(o.String())
		if err != nil || back != o {
			t.Fatalf("canonical form of %q does not round-trip: %+v, %v", s, back, err)
		}
	})
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"gpu", []string{"gpu"}},
		{" gpu , big ,,", []string{"gpu", "big"}},
		{",", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, SplitList(tt.in)); diff != "" {
			t.Errorf("SplitList(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}
