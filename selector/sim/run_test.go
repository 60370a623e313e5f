package sim

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Every policy, on a small cluster pushed to 200% of its capacity, places
// only what fits, and the same seed gives the same result.
func TestRunPolicies(t *testing.T) {
	w := testWorkload(t)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			f, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			for seed := int64(1); seed <= 5; seed++ {
				r, err := Run(w, f, seed, 2.0)
				if err != nil {
					t.Fatal(err)
				}
				if r.Placed > r.Pods || r.UsedMilli > r.CapacityMilli {
					t.Errorf("seed %d: placed %d of %d pods, %d of %d milli", seed, r.Placed, r.Pods, r.UsedMilli, r.CapacityMilli)
				}
				if r.FailedMilli == 0 {
					t.Errorf("seed %d: nothing failed at 200%% of capacity", seed)
				}
				idle := int64(0)
				for _, v := range r.Idle {
					idle += v
				}
				if idle != r.CapacityMilli-r.UsedMilli {
					t.Errorf("seed %d: idle breakdown sums to %d, want %d", seed, idle, r.CapacityMilli-r.UsedMilli)
				}
				if r.FragMilli < -1e-6 || r.FragMilli > float64(r.CapacityMilli-r.UsedMilli)+1e-6 {
					t.Errorf("seed %d: frag %g outside 0..idle", seed, r.FragMilli)
				}
				again, _ := Run(w, f, seed, 2.0)
				if diff := cmp.Diff(r, again, cmpopts.EquateNaNs()); diff != "" {
					t.Errorf("seed %d: two runs differ (-first +second):\n%s", seed, diff)
				}
			}
		})
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("fgd"); err != nil {
		t.Errorf("Lookup is not case-insensitive: %v", err)
	}
	_, err := Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown policy "nope" (want one of Random, DotProd`) {
		t.Errorf("Lookup(nope) = %v", err)
	}
	if got := Names()[:6]; !cmp.Equal(got, PaperPolicies) {
		t.Errorf("Names starts with %v, want the paper's %v", got, PaperPolicies)
	}
}
