package queue

import (
	"fmt"
	"math"
)

// Load scaling.
//
// A trace recorded on one cluster rarely loads another the same way: the
// Philly jobs, replayed at their own pace on 2,048 GPUs, keep a fifth of
// them busy on average and leave queues empty. The replay compresses time
// instead: submit times are divided by a factor K (durations are kept), so
// K times as much work arrives per hour. K is either given or chosen so
// that the busiest week of the trace (the 7 days in which the most
// GPU-seconds of work were submitted), compressed, arrives at peakLoad
// times the cluster's capacity: the cluster is sized against the
// busiest week of the trace, as capacity is usually planned. Because the
// week is taken in trace time, K is simply peakLoad / PeakLoad(trace).

// PeakWindow is the window the peak load is measured over: a week.
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

// PeakWindowFor is the window the peak load of jobs (sorted) is measured
// over: a week, or the span of their submit times when that is shorter. A
// day of jobs measured over a week would count six idle days: compressed
// to load its "busiest week" to 100%, the day arrived at 700%.
func PeakWindowFor(jobs []Job) float64 {
	if len(jobs) < 2 {
		return PeakWindow
	}
	if span := jobs[len(jobs)-1].Submit - jobs[0].Submit; span > 0 && span < PeakWindow {
		return span
	}
	return PeakWindow
}

// CompressionFor is the factor K that makes the busiest week of the jobs
// (sorted, in trace seconds; the whole span when shorter: PeakWindowFor)
// arrive at the target load on gpus GPUs.
func CompressionFor(jobs []Job, gpus int, target float64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("peak load %g: want a positive number", target)
	}
	peak := PeakLoad(jobs, gpus, PeakWindowFor(jobs))
	if !(peak > 0) {
		return 0, fmt.Errorf("the jobs submit no work: no compression reaches a peak load")
	}
	return target / peak, nil
}
