package slurmstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Each node's gangtopo features are compared with its domains in the
// cluster file (lab8: leaf1 = node01-04, leaf2 = node05-08, no spines),
// and the snapshot carries every node's features for the plugin.
func TestBuildSnapshotComparesFeatures(t *testing.T) {
	c := lab8(t)
	idle := func(name string, features ...string) Node {
		return Node{Name: name, State: occupancy.StateIdle, CPUs: 8, Threads: 1, MemoryMiB: 4000, GPUs: 8, Features: features}
	}
	st := &State{Nodes: []Node{
		idle("node01", "gt_leaf1", "gt_node01"),     // as generated
		idle("node02", "gt_leaf1", "gt_h100", "ib"), // no own feature, a model and a site feature: fine
		idle("node03", "gt_leaf2"),                  // another leaf's
		idle("node04"),                              // none at all
		idle("node05", "gt_leaf2", "gt_node06"),     // another node's own feature
		idle("node06", "gt_leaf2"), idle("node07", "gt_leaf2"), idle("node08", "gt_leaf2"),
	}}
	s, rep, err := BuildSnapshot(c, st, testTime, "gt_")
	if err != nil {
		t.Fatal(err)
	}
	const differ = "gangtopo node features differ from the cluster file, rewrite them with gangtopo gen features"
	want := []string{
		differ + " (missing gt_leaf1; not in the cluster file gt_leaf2) on 1 node: node03",
		differ + " (missing gt_leaf1) on 1 node: node04",
		differ + " (not in the cluster file gt_node06) on 1 node: node05",
	}
	if diff := cmp.Diff(want, rep.Lines()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if has, ok := s.HasFeature(mustNode(t, c, "node01"), "gt_node01"); !has || !ok {
		t.Errorf("snapshot: node01 carries gt_node01: %v (known %v)", has, ok)
	}
	if _, rep, _ := BuildSnapshot(c, st, testTime, ""); len(rep.Lines()) != 0 {
		t.Errorf("no prefix, no comparison: %q", rep.Lines())
	}
}
