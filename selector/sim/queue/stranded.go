package queue

import (
	"cmp"
	"math"
	"slices"
)

// Stranded GPU-hours: GPUs idle while jobs that fit them by count wait.
//
// At each moment, stranded = min(free GPUs, the GPUs of the waiting jobs
// each of which alone fits the free count): the idle GPUs the waiting
// work could have filled if GPUs were interchangeable. What strands them
// is everything but their number: placement (a gang that needs one leaf,
// a node that is not whole), a reservation, a quota or a partition (a
// team's idle nodes while another team queues), a requeue's drain. It is
// integrated over the submission window (first to last submit, as GPU
// utilisation is) from the outcomes alone, over the whole cluster, so a
// partitioned replay's figure counts GPUs idle in one partition while
// jobs wait in another.

// strandedEvent changes the busy GPUs (busy) or the waiting jobs of a
// size (size, by) at time t.
type strandedEvent struct {
	t        float64
	busy     int
	size, by int
}

// strandedGPUHours integrates the stranded GPUs of r over [lo, hi].
func strandedGPUHours(r *Result, lo, hi float64) float64 {
	return Integrate(StrandedSteps(r), lo, hi) / 3600
}

// stranded is min(free, the GPUs of the waiting jobs of at most free GPUs).
func stranded(free int, waiting map[int]int) int {
	fit := 0
	for size, n := range waiting {
		if size <= free {
			fit += size * n
		}
	}
	return min(free, fit)
}

// strandedEvents are the starts and ends of every run (requeued runs
// included) and of every wait: a job waits from its submission to its
// first run, and from each requeue to its next run; a job cancelled while
// it waited, until its cancellation.
func strandedEvents(r *Result) []strandedEvent {
	runs := make([][][2]float64, len(r.Jobs))
	for _, q := range r.Requeues {
		runs[q.Job] = append(runs[q.Job], [2]float64{q.Start, q.At})
	}
	var ev []strandedEvent
	for j := range r.Jobs {
		o := &r.Outcomes[j]
		g := r.Jobs[j].GPUs
		if o.Cancelled && math.IsNaN(o.Start) && r.Jobs[j].Cancel > r.Jobs[j].Submit {
			// cancelled while it waited: it waited until then
			ev = append(ev, strandedEvent{t: r.Jobs[j].Submit, size: g, by: 1}, strandedEvent{t: r.Jobs[j].Cancel, size: g, by: -1})
			continue
		}
		if o.Rejected || math.IsNaN(o.Start) {
			continue
		}
		rs := append(runs[j], [2]float64{o.Start, o.End})
		slices.SortFunc(rs, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		waitFrom := r.Jobs[j].Submit
		for _, run := range rs {
			if run[0] > waitFrom {
				ev = append(ev, strandedEvent{t: waitFrom, size: g, by: 1}, strandedEvent{t: run[0], size: g, by: -1})
			}
			ev = append(ev, strandedEvent{t: run[0], busy: g}, strandedEvent{t: run[1], busy: -g})
			waitFrom = run[1]
		}
	}
	return ev
}
