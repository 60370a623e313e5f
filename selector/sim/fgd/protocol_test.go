package fgd

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func totalMilli(w *Workload, order []int) int64 {
	t := int64(0)
	for _, i := range order {
		t += w.Jobs[i].TotalMilli()
	}
	return t
}

func TestTuneUp(t *testing.T) {
	w := testWorkload(t) // 16 GPUs; the 18 pods ask for 6+2+8+0+2 = 18 GPUs
	order := append([]int(nil), w.byName...)
	got := tuned(w, order, 2.0, rand.New(rand.NewSource(7)))
	total, target := totalMilli(w, got), 2.0*float64(w.capacity)
	if float64(total) > target {
		t.Errorf("tuned up to %d milli, past the target %g", total, target)
	}
	// It stops at the first drawn pod whose per-GPU share would pass the
	// target, so the total is within one whole GPU of it.
	if float64(total) <= target-1000 {
		t.Errorf("tuned up to %d milli, more than a GPU short of %g", total, target)
	}
	if len(got) <= len(order) {
		t.Errorf("no pods were added")
	}
}

func TestTuneDown(t *testing.T) {
	w := testWorkload(t)
	order := append([]int(nil), w.byName...)
	got := tuned(w, order, 0.5, rand.New(rand.NewSource(7)))
	if total := totalMilli(w, got); float64(total) > 0.5*float64(w.capacity) {
		t.Errorf("tuned down to %d milli, above %g", total, 0.5*float64(w.capacity))
	}
	// Removal keeps the order of the pods that stay.
	pos := map[int]int{}
	for i, j := range order {
		pos[j] = i
	}
	if !sort.SliceIsSorted(got, func(a, b int) bool { return pos[got[a]] < pos[got[b]] }) {
		t.Errorf("tuneDown reordered the pods")
	}
}

func TestArrivals(t *testing.T) {
	w := testWorkload(t)
	o1, r1, _ := arrivals(w, 42, DefaultTune)
	o2, r2, _ := arrivals(w, 42, DefaultTune)
	if diff := cmp.Diff(o1, o2); diff != "" {
		t.Errorf("same seed, different order (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(r1, r2); diff != "" {
		t.Errorf("same seed, different ranks (-first +second):\n%s", diff)
	}
	o3, _, _ := arrivals(w, 43, DefaultTune)
	if cmp.Equal(o1, o3) {
		t.Errorf("seeds 42 and 43 give the same order")
	}
	seen := make([]bool, len(r1))
	for _, r := range r1 {
		if r < 0 || int(r) >= len(r1) || seen[r] {
			t.Fatalf("ranks %v are not a permutation", r1)
		}
		seen[r] = true
	}
}
