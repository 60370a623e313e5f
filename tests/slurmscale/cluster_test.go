package slurmscale

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Each generated cluster file loads, with the nodes, GPUs and domains the
// scale labs are described with.
func TestClusterYAML(t *testing.T) {
	type counts struct{ Nodes, GPUs, Leaves, Spines, Blocks int }
	tests := []struct {
		name  string
		shape Shape
		nodes int
		want  counts
	}{
		// 1 spine x 8 leaves x 16 nodes: the make test smoke
		{"fat tree 128", FatTree, 128, counts{128, 1024, 8, 1, 0}},
		// 4 spines x 16 leaves x 16 nodes x 8 GPUs
		{"fat tree 1024", FatTree, 1024, counts{1024, 8192, 64, 4, 0}},
		// 57 racks of 18 (1,026 >= 1,024), 4 racks a leaf (15 leaves, the
		// last with 1 rack), 4 leaves a spine (4 spines)
		{"nvl72 1024", NVL72, 1024, counts{1026, 4104, 15, 4, 57}},
		{"nvl72 one rack", NVL72, 18, counts{18, 72, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, err := ClusterYAML(tc.shape, tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			c, err := topology.Parse(strings.NewReader(text), tc.name)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			got := counts{Nodes: len(c.Nodes), GPUs: len(c.GPUs), Leaves: len(c.ByTier[topology.TierLeaf]),
				Spines: len(c.ByTier[topology.TierSpine]), Blocks: len(c.ByTier[topology.TierBlock])}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

// Sizes a shape cannot have are refused, naming what is allowed.
func TestClusterYAMLRefuses(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		nodes int
		want  string
	}{
		{FatTree, 100, "multiple of 16"},
		{NVL72, 10, "at least one rack"},
		{"torus", 64, "want fattree or nvl72"},
	} {
		if _, err := ClusterYAML(tc.shape, tc.nodes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ClusterYAML(%s, %d) = %v, want an error saying %q", tc.shape, tc.nodes, err, tc.want)
		}
	}
}
