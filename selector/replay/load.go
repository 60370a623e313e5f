package replay

import (
	"fmt"
	"math"
)

// Load scaling.
//
// A trace recorded on one cluster rarely loads another the same way: the
// Philly jobs, replayed at their own pace on 2,048 GPUs, keep a third of
// them busy at the busiest and leave queues empty. The replay compresses
// time instead: submit times are divided by a factor K (durations are
// kept), so K times as much work arrives per hour. K is either given or
// chosen so that the busiest PeakWindow of replay time receives
// peakLoad times the cluster's capacity in submitted work (GPU-seconds of
// the jobs submitted in it over window x GPUs): the cluster is sized for
// the busiest week of the trace, as capacity is usually planned.

// PeakWindow is the window of replay time the peak load is measured over.
const PeakWindow = 7 * 24 * 3600.0

// Compress returns copies of jobs with submit times (Submit - origin)/k.
func Compress(jobs []Job, origin, k float64) []Job {
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		j.Submit = (j.Submit - origin) / k
		out[i] = j
	}
	return out
}

// PeakLoad is the most work submitted in any window of the given length,
// as a fraction of what gpus GPUs can do in it. jobs must be sorted by
// submit time.
func PeakLoad(jobs []Job, gpus int, window float64) float64 {
	return peakWork(jobs, window) / (window * float64(gpus))
}

// peakWork is the most GPU-seconds submitted in any window of the given
// length (two pointers over the sorted submit times).
func peakWork(jobs []Job, window float64) float64 {
	best, sum := 0.0, 0.0
	lo := 0
	for hi := range jobs {
		sum += jobs[hi].Duration * float64(jobs[hi].GPUs)
		for jobs[hi].Submit-jobs[lo].Submit >= window {
			sum -= jobs[lo].Duration * float64(jobs[lo].GPUs)
			lo++
		}
		best = max(best, sum)
	}
	return best
}

// OfferedLoad is the work submitted over the whole span of the jobs (first
// to last submit) as a fraction of what gpus GPUs can do in that span.
func OfferedLoad(jobs []Job, gpus int) float64 {
	if len(jobs) < 2 {
		return math.NaN()
	}
	work := 0.0
	for _, j := range jobs {
		work += j.Duration * float64(j.GPUs)
	}
	return work / ((jobs[len(jobs)-1].Submit - jobs[0].Submit) * float64(gpus))
}

// CompressionFor finds the factor K for which the jobs (sorted, in trace
// seconds) reach the target peak load on gpus GPUs over PeakWindow of
// replay time. PeakLoad grows with K (each window covers K times more of
// the trace), so bisection on log K finds it to 1e-9 relative.
func CompressionFor(jobs []Job, gpus int, target float64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("peak load %g: want a positive number", target)
	}
	// Compressed by k, a window of replay time covers k windows of trace.
	at := func(k float64) float64 { return peakWork(jobs, k*PeakWindow) / (PeakWindow * float64(gpus)) }
	lo, hi := 1e-4, 1e6
	if at(hi) < target {
		return 0, fmt.Errorf("the jobs hold too little work to load %d GPUs to %g (at most %.3g): choose a longer window or a compression factor", gpus, target, at(hi))
	}
	if at(lo) > target {
		return 0, fmt.Errorf("the jobs overload %d GPUs beyond %g even stretched %g times: choose a shorter window or a compression factor", gpus, target, 1/lo)
	}
	for i := 0; i < 200 && hi/lo > 1+1e-9; i++ {
		mid := math.Sqrt(lo * hi)
		if at(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
