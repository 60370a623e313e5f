package main

import (
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// TestStranded checks the stranded GPU-seconds of a record by hand, on
// 8 GPUs.
func TestStranded(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		jobs []queue.Job
		out  []queue.Outcome
		want float64
	}{{
		name: "a fitting job waits on free GPUs",
		// a holds 4 of 8 from 0 to 100; b (4) waits from 10 to 40 with 4
		// free: 4 GPUs x 30 s
		jobs: []queue.Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 4}},
		out:  []queue.Outcome{{Start: 0, End: 100}, {Start: 40, End: 50}},
		want: 120,
	}, {
		name: "a job too big for the free GPUs strands nothing",
		// b (8) waits from 10 to 100 while 4 are free: it does not fit them
		jobs: []queue.Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 8}},
		out:  []queue.Outcome{{Start: 0, End: 100}, {Start: 100, End: 110}},
		want: 0,
	}, {
		name: "a job cancelled while waiting strands until its cancellation",
		// b (2) waits from 10 and is cancelled at 30 with 4 free: 4 x 20
		jobs: []queue.Job{{Submit: 0, GPUs: 4}, {Submit: 10, GPUs: 2, Cancel: 30}},
		out:  []queue.Outcome{{Start: 0, End: 100}, {Start: nan, End: nan, Cancelled: true}},
		want: 80,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stranded(&queue.Result{GPUs: 8, Jobs: tc.jobs, Outcomes: tc.out})
			if got != tc.want {
				t.Errorf("stranded %g GPU-s, want %g", got, tc.want)
			}
		})
	}
}
