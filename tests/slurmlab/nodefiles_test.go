package slurmlab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// The lab writes one node file per node, FromCluster's text, mode 0644,
// alone in its node's own directory (no node has another node's file, as
// on a real cluster), and leaves no temporary file behind; a second run
// replaces the files.
func TestWriteNodeFiles(t *testing.T) {
	c := topotest.Lab16()
	root := t.TempDir()
	dirOf := func(node string) string { return filepath.Join(root, node, "nodes") }
	for run := 0; run < 2; run++ {
		if err := writeNodeFiles(c, dirOf); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.Nodes {
		f := nodefile.FromCluster(c, topology.NodeID(i))
		entries, err := os.ReadDir(dirOf(f.Node))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if diff := cmp.Diff([]string{f.Node}, got); diff != "" {
			t.Errorf("%s's directory (-want +got):\n%s", f.Node, diff)
		}
		path := filepath.Join(dirOf(f.Node), f.Node)
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
