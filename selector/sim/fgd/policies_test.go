package fgd

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

func TestBestFitScore(t *testing.T) {
	w := testWorkload(t)
	s := occupancy.New(w.Cluster)
	take(t, s, "t4-1", 1000, 8000, 0)
	tests := []struct {
		node, pod string
		want      int64
	}{
		// g2-0: (96000-4000)/128000*0.5 + (8000-1000)/8000*0.5 = 0.359375+0.4375; (1-0.796875)*100 = 20.3
		{"g2-0", "whole-a", 20},
		// t4-0: (32000-4000)/128000*0.5 + (2000-1000)/8000*0.5 = 0.109375+0.0625; 82.8
		{"t4-0", "whole-a", 82},
		// t4-1 has 24000 CPUs and 1000 milli left: 0.078125 + 0; 92.2
		{"t4-1", "whole-a", 92},
		// a share on t4-1: 0.0859375 + 600/8000*0.5 = 0.0375; 87.7
		{"t4-1", "share-a", 87},
	}
	for _, tc := range tests {
		got := bestFit{}.score(s, nodeID(t, w.Cluster, tc.node), jobOf(t, w, tc.pod))
		if got != tc.want {
			t.Errorf("bestFit(%s, %s) = %d, want %d", tc.node, tc.pod, got, tc.want)
		}
	}
}

func TestDotProdScore(t *testing.T) {
	w := testWorkload(t)
	s := occupancy.New(w.Cluster)
	// g2-0, whole: dot = 96000/128000*4000/128000 + 8000/8000*1000/8000
	// = 0.0234375 + 0.125; 100*(1-0.07421875) = 92.6
	if got := (dotProd{}).score(s, nodeID(t, w.Cluster, "g2-0"), jobOf(t, w, "whole-a")); got != 92 {
		t.Errorf("dotProd = %d, want 92", got)
	}
	// t4-0: 32000/128000*4000/128000 + 2000/8000*1000/8000 = 0.0078125+0.03125; 98.0
	if got := (dotProd{}).score(s, nodeID(t, w.Cluster, "t4-0"), jobOf(t, w, "whole-a")); got != 98 {
		t.Errorf("dotProd = %d, want 98", got)
	}
}

func TestPackingScore(t *testing.T) {
	w := testWorkload(t)
	s := occupancy.New(w.Cluster)
	take(t, s, "g2-0", 300, 1000, 0)       // GPU 0 has 700 left
	take(t, s, "v100-0", 1000, 1000, 0, 1) // two whole GPUs used
	tests := []struct {
		node, pod string
		want      int64
	}{
		{"t4-0", "whole-a", 31},   // empty node, 2 GPUs: 33-2
		{"g2-0", "whole-a", 49},   // used node, one free GPU taken: 50-1
		{"g2-0", "share-a", 93},   // share on the used GPU: 100 - 70/10
		{"v100-0", "whole-a", 49}, // 50-1
		{"g2-0", "cpu-a", 0},      // CPU-only pods score 0
	}
	for _, tc := range tests {
		got := packing{}.score(s, nodeID(t, w.Cluster, tc.node), jobOf(t, w, tc.pod))
		if got != tc.want {
			t.Errorf("packing(%s, %s) = %d, want %d", tc.node, tc.pod, got, tc.want)
		}
	}
}

func TestClusteringScore(t *testing.T) {
	w := testWorkload(t)
	s := occupancy.New(w.Cluster)
	c := newClustering(testEnv(w)).(*clustering)
	g2 := nodeID(t, w.Cluster, "g2-0")
	share, whole := jobOf(t, w, "share-a"), jobOf(t, w, "whole-a")
	// Empty node: 25*(8000-8000)/8000 + 25.
	if got := c.score(s, g2, share); got != 25 {
		t.Errorf("empty node: %d, want 25", got)
	}
	take(t, s, "g2-0", 400, 2000, 0)
	c.placed(g2, share)
	// Only shares here: 25*(8000-7600)/8000 = 1, + 75.
	if got := c.score(s, g2, share); got != 76 {
		t.Errorf("same kind: %d, want 76", got)
	}
	// A whole-GPU pod finds only another kind: 1 + 0.
	if got := c.score(s, g2, whole); got != 1 {
		t.Errorf("other kind: %d, want 1", got)
	}
	take(t, s, "g2-0", 1000, 4000, 1)
	c.placed(g2, whole)
	// Both kinds now: 25*(8000-6600)/8000 = 4, + 50.
	if got := c.score(s, g2, share); got != 54 {
		t.Errorf("mixed kinds: %d, want 54", got)
	}
}

// FGD puts a share on the GPU whose use fragments least, the first in
// index order among equal scores; whole GPUs go to the first free ones.
func TestFGDChoice(t *testing.T) {
	w := testWorkload(t)
	s := occupancy.New(w.Cluster)
	f := newFGD(testEnv(w)).(*fgd)
	g2 := nodeID(t, w.Cluster, "g2-0")
	take(t, s, "g2-0", 600, 2000, 3) // GPU 3 has 400 left: exactly a share
	share := jobOf(t, w, "share-a")
	if got := f.gpus(s, g2, share); !cmp.Equal(got, []int{3}) {
		t.Errorf("share goes to GPU %v, want 3 (it fills the 400 left exactly)", got)
	}
	if got := f.gpus(s, g2, jobOf(t, w, "quad-a")); !cmp.Equal(got, []int{0, 1, 2, 4}) {
		t.Errorf("quad goes to %v, want the first four free GPUs", got)
	}
	// Filling GPU 3 removes a fragment: the score is above 50.
	if sc := f.score(s, g2, share); sc <= 50 {
		t.Errorf("score = %d, want > 50", sc)
	}
}

func TestFGDScoreSquash(t *testing.T) {
	tests := []struct {
		before, after float64
		want          int64
	}{
		{1000, 1000, 50},   // no change
		{1000, 1000.5, 49}, // any increase truncates below 50
		{0, 2000, 11},      // sigmoid(-2) = 0.119
		{3000, 0, 95},      // sigmoid(3) = 0.953
	}
	for _, tc := range tests {
		if got := fgdScore(tc.before, tc.after); got != tc.want {
			t.Errorf("fgdScore(%g, %g) = %d, want %d", tc.before, tc.after, got, tc.want)
		}
	}
}

// Equal scores go to the lowest rank; a node that changed is rescored.
func TestKubeTiesAndCache(t *testing.T) {
	w := testWorkload(t)
	env := testEnv(w)
	t40, t41 := nodeID(t, w.Cluster, "t4-0"), nodeID(t, w.Cluster, "t4-1")
	env.Ranks[t40], env.Ranks[t41] = 3, 1 // t4-1 ranks before t4-0
	env.Ranks[nodeID(t, w.Cluster, "g2-0")] = 0
	env.Ranks[nodeID(t, w.Cluster, "v100-0")] = 2
	k := newKube("BestFit", bestFit{}, env)
	s := occupancy.New(w.Cluster)
	j := jobOf(t, w, "t4-a") // T4 only: t4-0 and t4-1 score alike
	a, ok := k.Place(s, j)
	if !ok || a.Nodes[0].Node != t41 {
		t.Fatalf("first T4 pod on %v, want t4-1 (lower rank)", a)
	}
	if err := s.Allocate(a); err != nil {
		t.Fatal(err)
	}
	// t4-1 is now fuller: best fit prefers it, and must see the change.
	a, ok = k.Place(s, j)
	if !ok || a.Nodes[0].Node != t41 || !cmp.Equal(a.Nodes[0].GPUs, []int{1}) {
		t.Fatalf("second T4 pod on %+v, want t4-1 GPU 1", a)
	}
	if err := s.Allocate(a); err != nil {
		t.Fatal(err)
	}
	a, ok = k.Place(s, j)
	if !ok || a.Nodes[0].Node != t40 {
		t.Fatalf("third T4 pod on %+v, want t4-0 (t4-1 is full)", a)
	}
}
