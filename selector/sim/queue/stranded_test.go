package queue

import (
	"math"
	"testing"
)

func TestStrandedGPUHours(t *testing.T) {
	jobs := []Job{
		{Name: "a", Submit: 0, GPUs: 4},
		{Name: "b", Submit: 0, GPUs: 4},
		{Name: "c", Submit: 200, GPUs: 8},
	}
	tests := []struct {
		name     string
		outcomes []Outcome
		requeues []Requeue
		want     float64 // GPU-seconds
	}{
		// 0-50: a runs, 4 GPUs free while b (4) waits: 4 x 50 = 200;
		// 50-100 none free; 100-200 nobody waits (c comes at 200).
		{"a job that fits waits", []Outcome{{Start: 0, End: 100}, {Start: 50, End: 150}, {Start: 200, End: 210}}, nil, 200},
		// b ran 10-20, was requeued and waited again until 50: 4 x 10 +
		// 4 x 30 = 160.
		{"the wait after a requeue", []Outcome{{Start: 0, End: 100}, {Start: 50, End: 150}, {Start: 200, End: 210}},
			[]Requeue{{Job: 1, Start: 10, At: 20, GPUs: 4}}, 160},
		// a holds all 8... as two jobs: nothing free while b waits; c
		// waits for 8 but never finds 8 free: 0.
		{"nothing free", []Outcome{{Start: 0, End: 300}, {Start: 0, End: 300}, {Start: 300, End: 310}}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{GPUs: 8, Jobs: jobs, Outcomes: tc.outcomes, Requeues: tc.requeues}
			if got := strandedGPUHours(r, 0, 200) * 3600; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("stranded = %g GPU-s, want %g", got, tc.want)
			}
		})
	}
}

// More free GPUs than the waiting jobs need count only what they need; a
// job larger than the free GPUs counts nothing.
func TestStrandedIsWhatFits(t *testing.T) {
	w := map[int]int{1: 3, 16: 1}
	if got := stranded(8, w); got != 3 {
		t.Errorf("8 free, three 1-GPU jobs and a 16-GPU job waiting: %d stranded, want 3", got)
	}
	if got := stranded(2, map[int]int{4: 2}); got != 0 {
		t.Errorf("2 free, 4-GPU jobs waiting: %d, want 0", got)
	}
	if got := stranded(5, map[int]int{4: 2}); got != 5 {
		t.Errorf("5 free, two 4-GPU jobs waiting: %d, want min(5, 8) = 5", got)
	}
}

// TestStrandedByHand: a record's stranded GPU-seconds worked by hand on
// 8 GPUs, over the whole record (the summary takes the submission
// window).
func TestStrandedByHand(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		jobs []Job
		out  []Outcome
		want float64
	}{{
		name: "a fitting job waits on free GPUs",
		// a holds 4 of 8 from 0 to 100; b (4) waits from 10 to 40 with 4
		// free: min(4, 4) x 30 s
		jobs: []Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 4}},
		out:  []Outcome{{Start: 0, End: 100}, {Start: 40, End: 50}},
		want: 120,
	}, {
		name: "a job too big for the free GPUs strands nothing",
		// b (8) waits from 10 to 100 while 4 are free: it does not fit them
		jobs: []Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 8}},
		out:  []Outcome{{Start: 0, End: 100}, {Start: 100, End: 110}},
		want: 0,
	}, {
		name: "a job cancelled while waiting strands until its cancellation",
		// b (2) waits from 10 and is cancelled at 30 with 4 free:
		// min(4, 2) x 20 s
		jobs: []Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 2, Cancel: 30}},
		out:  []Outcome{{Start: 0, End: 100}, {Start: nan, End: nan, Cancelled: true}},
		want: 40,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strandedGPUHours(&Result{GPUs: 8, Jobs: tc.jobs, Outcomes: tc.out}, 0, math.Inf(1)) * 3600
			if math.Abs(got-tc.want) > 1e-6 {
				t.Errorf("stranded %g GPU-s, want %g", got, tc.want)
			}
		})
	}
}
