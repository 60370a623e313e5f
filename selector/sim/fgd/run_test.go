package fgd

import (
	"strconv"
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
				checkContents(t, r, len(w.Cluster.GPUs))
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

// checkContents: every GPU is in one combination, each combination's
// shares plus its idle capacity fill its GPUs, and the idle capacity adds
// up to the run's.
func checkContents(t *testing.T, r *Result, gpus int) {
	t.Helper()
	n, idle := 0, int64(0)
	for key, l := range r.Contents {
		n += l.GPUs
		idle += l.IdleMilli
		used := 0
		if key != "" {
			for _, f := range strings.Split(key, "+") {
				m, err := strconv.Atoi(f)
				if err != nil || m < 1 || m > 1000 {
					t.Fatalf("seed %d: combination %q: share %q", r.Seed, key, f)
				}
				used += m
			}
		}
		if int64(used)*int64(l.GPUs)+l.IdleMilli != int64(l.GPUs)*1000 {
			t.Errorf("seed %d: %d GPUs holding %q leave %d milli free, want %d", r.Seed, l.GPUs, key, l.IdleMilli, int64(l.GPUs)*int64(1000-used))
		}
	}
	if n != gpus || idle != r.CapacityMilli-r.UsedMilli {
		t.Errorf("seed %d: contents cover %d GPUs and %d idle milli, want %d and %d", r.Seed, n, idle, gpus, r.CapacityMilli-r.UsedMilli)
	}
}
