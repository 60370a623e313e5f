package topology_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// The hash identifies a topology's content: the same file read under two
// paths (the daemon's copy and the plugin's) must hash alike, or every
// snapshot would be refused as made against another topology.
func TestHashIgnoresWhereTheFileWasRead(t *testing.T) {
	data, err := os.ReadFile("../../docs/examples/lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := topology.Parse(strings.NewReader(string(data)), "/etc/gangtopo/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := topology.Parse(strings.NewReader(string(data)), "lab16.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash != b.Hash {
		t.Errorf("hash depends on the file name: %s vs %s", a.Hash, b.Hash)
	}
}
