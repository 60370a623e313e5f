package slurmlab

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// The lab writes one node file per node, FromCluster's text, mode 0644,
// each alone in its node's directory, and leaves no temporary file behind;
// a second run replaces the files.
func TestWriteNodeFiles(t *testing.T) {
	c := topotest.Lab16()
	dir := filepath.Join(t.TempDir(), "nodes")
	for run := 0; run < 2; run++ {
		if err := writeNodeFiles(c, dir); err != nil {
			t.Fatal(err)
		}
	}
	var want, got []string
	for i := range c.Nodes {
		want = append(want, c.Nodes[i].Name)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
		inside, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil || len(inside) != 1 || inside[0].Name() != e.Name() {
			t.Errorf("%s/: %v, %v; want only the file %s", e.Name(), inside, err, e.Name())
		}
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	for i := range c.Nodes {
		f := nodefile.FromCluster(c, topology.NodeID(i))
		path := filepath.Join(dir, f.Node, f.Node)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(f.Render()), string(data)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f.Node, diff)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v; want 0644", f.Node, st.Mode().Perm(), err)
		}
	}
}
