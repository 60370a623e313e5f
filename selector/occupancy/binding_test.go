package occupancy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func TestBindingsRoundTrip(t *testing.T) {
	c := topotest.Lab16()
	s := New(c)
	s.Bindings = []Binding{{Job: "12", Features: "[gt_node02|gt_node06]"}, {Job: "13+1", Excluded: "node[05-08]"}}
	var buf bytes.Buffer
	if err := s.Encode(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf, "s.json", c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Bindings, got.Bindings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestBindingsRefused(t *testing.T) {
	c := topotest.Lab16()
	for _, tc := range []struct{ bindings, want string }{
		{`[{"job": ""}]`, `bindings[0]: job "" is not a job ID`},
		{`[{"job": "1"}, {"job": "1"}]`, "bindings[1]: job 1 listed twice"},
		{`[{"job": "1", "feature": "x"}]`, `unknown field "feature"`},
	} {
		in := `{"version": "v1", "cluster": "lab16", "generation": 1, "time": "2026-01-01T00:00:00Z", "nodes": [], "bindings": ` + tc.bindings + `}`
		if _, err := Decode(strings.NewReader(in), "s.json", c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bindings %s: error %v, want %q", tc.bindings, err, tc.want)
		}
	}
}
