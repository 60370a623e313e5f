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
	// uid 0 is root's, and known: not the same as a binding without a user
	s.Bindings = []Binding{{Job: "12", User: 1000, HasUser: true, Features: "[gt_node02|gt_node06]"},
		{Job: "13+1", User: 0, HasUser: true, Excluded: "node[05-08]"}, {Job: "14", Excluded: "node01"}}
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

// TestBindingOwner: a binding says whose job it is only when the snapshot
// does; the first component of a heterogeneous job speaks for the whole.
func TestBindingOwner(t *testing.T) {
	s := New(topotest.Lab16())
	s.Bindings = []Binding{{Job: "12", User: 1000, HasUser: true}, {Job: "13"}, {Job: "20+0", User: 7, HasUser: true}}
	type owner struct{ Owns, Known, Het bool }
	for _, tc := range []struct {
		id   string
		uid  uint32
		want owner
	}{
		{"12", 1000, owner{true, true, false}},
		{"12", 1001, owner{false, true, false}},
		{"12_3", 1000, owner{true, true, false}}, // a task still in array 12's record
		{"13", 1000, owner{false, false, false}},
		{"20", 7, owner{true, true, true}},
		{"20", 8, owner{false, true, true}},
	} {
		b, _, het := s.BindingOf(tc.id)
		owns, known := b.Owner(tc.uid)
		if diff := cmp.Diff(tc.want, owner{owns, known, het}); diff != "" {
			t.Errorf("job %s, uid %d (-want +got):\n%s", tc.id, tc.uid, diff)
		}
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

// TestPendingHoldsRoundTrip: a snapshot that lists no pending holds says
// so ([]), which is not the same as one that does not list them (absent):
// the plugin lets go of its holds only on the word of the first.
func TestPendingHoldsRoundTrip(t *testing.T) {
	c := topotest.Lab16()
	for _, tc := range []struct {
		name  string
		holds map[string]bool
		json  string // what the file says
	}{
		{"not listed", nil, ""},
		{"none pending", map[string]bool{}, `"pending_holds": []`},
		{"two", map[string]bool{"0f0f0f0f0f0f": true, "00ab12cd34ef": true}, `"00ab12cd34ef",`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(c)
			s.PendingHolds = tc.holds
			var buf bytes.Buffer
			if err := s.Encode(&buf, "test"); err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(buf.String(), `"pending_holds"`); has != (tc.json != "") || !strings.Contains(buf.String(), tc.json) {
				t.Errorf("file:\n%s\nwant %q", buf.String(), tc.json)
			}
			got, err := Decode(&buf, "s.json", c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.holds, got.PendingHolds); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	in := `{"version": "v1", "cluster": "lab16", "generation": 1, "time": "2026-01-01T00:00:00Z", "nodes": [], "pending_holds": ["a b"]}`
	if _, err := Decode(strings.NewReader(in), "s.json", c); err == nil || !strings.Contains(err.Error(), `pending_holds[0]: "a b" is not a hold`) {
		t.Errorf("a hold with a blank: %v", err)
	}
}
