package fgd

import (
	"math"
	"testing"
)

func TestRecorder(t *testing.T) {
	r := newRecorder(10) // 10 GPUs: 1% of capacity is 100 milli
	// Arrived 1.00% and 1.04% fall in bucket 1; 2.5% rounds half to even
	// into bucket 2; nothing arrives at 3%, so 3 averages 2 and 4.
	r.add(100, 100, 50, 9900)
	r.add(104, 100, 70, 9900)
	r.add(250, 200, 10, 9800)
	r.add(400, 300, 0, 9700)
	c := r.curve()
	tests := []struct {
		name      string
		got, want float64
	}{
		{"alloc 1", c.Alloc[1], 1},
		{"frag amount 1", c.FragAmount[1], 0.6},             // mean 60 milli of 10000
		{"frag ratio 1", c.FragRatio[1], (0.51 + 0.71) / 2}, // each rounded to 2 decimals
		{"alloc 2", c.Alloc[2], 2},
		{"alloc 3 (from 2 and 4)", c.Alloc[3], 2.5},
		{"alloc 4", c.Alloc[4], 3},
	}
	for _, tc := range tests {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if !math.IsNaN(c.Alloc[10]) || !math.IsNaN(c.Alloc[130]) {
		t.Errorf("points without data = %v, %v; want NaN", c.Alloc[10], c.Alloc[130])
	}
}

// pairwiseSum follows numpy: eight interleaved sums from 8 values on.
func TestPairwiseSum(t *testing.T) {
	a := []float64{1e16, 1, 1, 1, 1, 1, 1, 1, 1, -1e16}
	// A running sum loses every 1 added to 1e16 (the spacing there is 2);
	// numpy's interleaved sums add seven of them together first.
	r := [8]float64{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]}
	want := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
	want += a[8]
	want += a[9]
	if got := pairwiseSum(a); got != want {
		t.Errorf("pairwiseSum = %v, want %v", got, want)
	}
	running := 0.0
	for _, x := range a {
		running += x
	}
	if running == want {
		t.Fatal("test input does not separate the two sums")
	}
	x, y, z := 0.1, 0.2, 0.3
	if got := pairwiseSum([]float64{x, y, z}); got != x+y+z {
		t.Errorf("short sums are running sums: %v", got)
	}
}

// Python rounds the exact binary value (2.675 is 2.67499999999999982...,
// so 2.67); numpy multiplies by 100 first, and 2.675*100 is 267.5 in
// float64, which rounds to even: 2.68. The merge scripts use both.
func TestRounding(t *testing.T) {
	if got := round2(1.005); got != 1 {
		t.Errorf("round2(1.005) = %v, want 1", got)
	}
	if got := round2(0.125); got != 0.12 {
		t.Errorf("round2(0.125) = %v, want 0.12 (exact tie, to even)", got)
	}
	if got := npRound2(2.675); got != 2.68 {
		t.Errorf("npRound2(2.675) = %v, want 2.68 (267.49999999999997 is 267.5 in float)", got)
	}
	if got := round2(2.675); got != 2.67 {
		t.Errorf("round2(2.675) = %v, want 2.67", got)
	}
}
