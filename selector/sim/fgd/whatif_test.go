package fgd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// The what-if refuses exactly the named shape, room or not, and asks the
// wrapped policy about every other pod.
func TestRefusing(t *testing.T) {
	w := testWorkload(t)
	f, err := Lookup("gangtopo")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := f(testEnv(w))
	if err != nil {
		t.Fatal(err)
	}
	what, err := Refusing(f, 400)(testEnv(w))
	if err != nil {
		t.Fatal(err)
	}
	if want := "gangtopo, 400-milli pods refused"; what.Name() != want {
		t.Errorf("name %q, want %q", what.Name(), want)
	}
	s := occupancy.New(w.Cluster)
	for i := range w.Jobs {
		j := &w.Jobs[i]
		got, ok := what.Place(s, j)
		want, wantOK := inner.Place(s, j)
		if j.GPUs == 1 && j.Milli == 400 {
			if ok || !wantOK {
				t.Errorf("%s: what-if placed it: %v; the wrapped policy could: %v", j.Pod.Name, ok, wantOK)
			}
			continue
		}
		if ok != wantOK || !cmp.Equal(got, want) {
			t.Errorf("%s: what-if %v %+v, wrapped policy %v %+v", j.Pod.Name, ok, got, wantOK, want)
		}
		if ok {
			if err := s.Allocate(got); err != nil {
				t.Fatal(err)
			}
		}
	}
}
