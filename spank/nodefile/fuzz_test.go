package nodefile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A node file that parses renders back to one that parses the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte("gangtopo-node v1\nnode n1\ndomain leaf l1\nnvlink n1/nvl0 0-7\nnic mlx5_0 0,3\nnic mlx5_1\n"))
	f.Add([]byte("# c\ngangtopo-node v1 # x\nnode a\n"))
	f.Add([]byte("gangtopo-node v2\nnode n1\ndomain leaf l1\nmembers n[1-4]\nmembers m7,x[01,03]\ndomain any c\nmembers n[1-8]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := Parse(in)
		if err != nil {
			return
		}
		b, err := Parse(a.Render())
		if err != nil {
			t.Fatalf("rendered file does not parse: %v\n%s", err, a.Render())
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("round trip (-first +second):\n%s", diff)
		}
	})
}
