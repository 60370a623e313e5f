package occupancy_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// EncodeCompact is Encode without the indentation: both decode to the same
// snapshot.
func TestEncodeCompact(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	if err := s.AddJob(occupancy.Job{ID: "9", User: "u", Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{
		{Node: node(t, c, "node03"), GPUs: []int{1, 2}, Milli: 1000, CPUMilli: 3000},
		{Node: node(t, c, "node04"), GPUs: []int{5}, Milli: 300},
	}}}); err != nil {
		t.Fatal(err)
	}
	var pretty, compact bytes.Buffer
	if err := s.Encode(&pretty, "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.EncodeCompact(&compact, "t"); err != nil {
		t.Fatal(err)
	}
	if compact.Len() >= pretty.Len() || bytes.Count(compact.Bytes(), []byte("\n")) != 1 {
		t.Errorf("compact form is %d bytes in %d lines, indented %d", compact.Len(), bytes.Count(compact.Bytes(), []byte("\n")), pretty.Len())
	}
	a, err := occupancy.Decode(&pretty, "pretty", c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := occupancy.Decode(&compact, "compact", c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.FreeMilli, b.FreeMilli); diff != "" {
		t.Errorf("FreeMilli (-pretty +compact):\n%s", diff)
	}
	if diff := cmp.Diff(a.Jobs, b.Jobs); diff != "" {
		t.Errorf("Jobs (-pretty +compact):\n%s", diff)
	}
}
