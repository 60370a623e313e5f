package queue

import (
	"math"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	day := 24 * 3600.0
	// Two 8-GPU jobs of one day, a week apart, then a 1-GPU job.
	jobs := []Job{{Name: "a", Submit: 0, Duration: day, GPUs: 8}, {Name: "b", Submit: 7 * day, Duration: day, GPUs: 8}, {Name: "c", Submit: 8 * day, Duration: day, GPUs: 1}}
	// On 8 GPUs: any week holds at most one 8-GPU day plus b's... the
	// window [7d, 14d) holds b and c: 9 GPU-days of 56.
	if got, want := PeakLoad(jobs, 8, PeakWindow), 9.0/56; math.Abs(got-want) > 1e-12 {
		t.Errorf("PeakLoad = %g, want %g", got, want)
	}
	// Over the 8-day span 17 GPU-days of 64.
	if got, want := OfferedLoad(jobs, 8), 17.0/64; math.Abs(got-want) > 1e-12 {
		t.Errorf("OfferedLoad = %g, want %g", got, want)
	}
	// The busiest week submits 9/56 of 8 GPUs' capacity; to make it 0.9
	// the trace runs 0.9 / (9/56) = 5.6 times faster.
	k, err := CompressionFor(jobs, 8, 0.9)
	if err != nil || math.Abs(k-5.6) > 1e-9 {
		t.Errorf("CompressionFor = %g, %v; want 5.6", k, err)
	}
	got := Compress(jobs, 1*day, 2)
	if got[1].Submit != 3*day || got[1].Duration != day || jobs[1].Submit != 7*day {
		t.Errorf("Compress: %+v (input changed: %+v)", got[1], jobs[1])
	}
	if _, err := CompressionFor([]Job{{Name: "idle", Submit: 0, Duration: 0, GPUs: 1}}, 8, 0.5); err == nil || !strings.Contains(err.Error(), "no work") {
		t.Errorf("CompressionFor without work: %v", err)
	}
	if _, err := CompressionFor(jobs, 8, -1); err == nil {
		t.Error("CompressionFor(-1): no error")
	}
}

// Jobs submitted over less than a week are measured over their own span:
// a day of work measured over a week counted six idle days, and the replay
// of one day arrived at seven times the load asked for (issue 25).
func TestPeakWindowOfAShortTrace(t *testing.T) {
	hour := 3600.0
	// Over 12 hours, four 8-GPU jobs of 3 hours: 96 GPU-hours on 8 GPUs.
	jobs := []Job{{Submit: 0, Duration: 3 * hour, GPUs: 8}, {Submit: 4 * hour, Duration: 3 * hour, GPUs: 8},
		{Submit: 8 * hour, Duration: 3 * hour, GPUs: 8}, {Submit: 12 * hour, Duration: 3 * hour, GPUs: 8}}
	if got := PeakWindowFor(jobs); got != 12*hour {
		t.Errorf("PeakWindowFor = %g h, want the 12 h span", got/hour)
	}
	// any 12 hours [t, t+12h) submit at most three of the jobs: 72
	// GPU-hours of 96, load 0.75; for 0.5 the trace runs at 0.5 / 0.75 =
	// 2/3 of its speed, not 0.5 / (96 / (168 x 8)) = 7 times faster
	k, err := CompressionFor(jobs, 8, 0.5)
	if err != nil || math.Abs(k-2.0/3) > 1e-9 {
		t.Errorf("CompressionFor = %g, %v; want 2/3", k, err)
	}
	for _, tc := range []struct {
		name string
		jobs []Job
	}{{"one job", jobs[:1]}, {"all at once", []Job{{Submit: 5}, {Submit: 5}}}, {"over a week", []Job{{Submit: 0}, {Submit: 8 * 24 * hour}}}} {
		if got := PeakWindowFor(tc.jobs); got != PeakWindow {
			t.Errorf("%s: PeakWindowFor = %g h, want a week", tc.name, got/hour)
		}
	}
}
