package discovery

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// The node file lists GPUs by index, sorted, whatever the order of the
// node map's GPUs: here DGX H100 (mlx5_3, GPU 3's own HCA, down) with its
// indices reversed, so the GPU at position p has index 7-p.
func TestBuildNodeFileSortsGPUs(t *testing.T) {
	f, err := os.Open("testdata/nodemaps/dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := DecodeNodeMap(f, "dgx-h100.json")
	if err != nil {
		t.Fatal(err)
	}
	for p := range m.GPUs {
		m.GPUs[p].Index = len(m.GPUs) - 1 - p
	}
	domains := []nodefile.Domain{{Tier: "leaf", Name: "leaf1"}, {Tier: "any", Name: "lab"}}
	want := nodefile.File{
		Node:    "node1",
		Domains: domains,
		NVLink:  []nodefile.Set{{Name: "node1/nvl0", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}},
		// positions 0-2 also use mlx5_0-2 for position 3, whose HCA is
		// down: mlx5_0 serves positions 0 and 3, indices 7 and 4
		NICs: []nodefile.Set{
			{Name: "mlx5_0", GPUs: []int{4, 7}}, {Name: "mlx5_1", GPUs: []int{4, 6}}, {Name: "mlx5_2", GPUs: []int{4, 5}},
			{Name: "mlx5_4", GPUs: []int{3}}, {Name: "mlx5_5", GPUs: []int{2}}, {Name: "mlx5_6", GPUs: []int{1}}, {Name: "mlx5_7", GPUs: []int{0}},
		},
	}
	if diff := cmp.Diff(want, BuildNodeFile(m, domains)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
