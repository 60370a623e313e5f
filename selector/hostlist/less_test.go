package hostlist

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"node2", "node10", true},
		{"node10", "node2", false},
		{"mlx5_2", "mlx5_10", true},
		{"node1", "node1", false},
		{"node01", "node1", true}, // naturally equal: byte order decides
		{"node1", "node01", false},
		{"node", "node1", true},
		{"a9", "b1", true},
		{"gpu-a1b", "gpu-a1c", true},
		{"n99999999999999999999999", "n100000000000000000000000", true},
		{"", "a", true},
		{"a", "", false},
	}
	for _, tt := range tests {
		if got := Less(tt.a, tt.b); got != tt.want {
			t.Errorf("Less(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestLessSorts(t *testing.T) {
	got := []string{"node10", "leaf2", "node2", "node1", "mlx5_10", "node01", "mlx5_2"}
	sort.Slice(got, func(i, j int) bool { return Less(got[i], got[j]) })
	want := []string{"leaf2", "mlx5_2", "mlx5_10", "node01", "node1", "node2", "node10"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sorted (-want +got):\n%s", diff)
	}
}

// FuzzLess checks that Less is a strict order: irreflexive and asymmetric,
// and total (exactly one of a<b, b<a holds for distinct strings).
func FuzzLess(f *testing.F) {
	for _, s := range []string{"node1", "node01", "mlx5_10", "", "a0b"} {
		f.Add(s, "node10")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if Less(a, a) {
			t.Fatalf("Less(%q, %q) is true", a, a)
		}
		ab, ba := Less(a, b), Less(b, a)
		if ab && ba {
			t.Fatalf("Less(%q, %q) and Less(%q, %q) both true", a, b, b, a)
		}
		if a != b && !ab && !ba {
			t.Fatalf("%q and %q are distinct but neither is less", a, b)
		}
	})
}
