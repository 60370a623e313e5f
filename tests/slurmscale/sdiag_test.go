package slurmscale

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sdiagOut is the layout of 22.05's sdiag (src/sdiag/sdiag.c), cut to
// the lines read.
const sdiagOut = `*******************************************************
sdiag output at Sat Dec 05 20:11:47 2026 (1796501507)
Data since      Sat Dec 05 20:10:47 2026 (1796501447)
*******************************************************
Server thread count:  3
Agent queue size:     0
Jobs submitted: 30
Jobs started:   12
Jobs pending:   1925
Jobs running:   376

Main schedule statistics (microseconds):
	Last cycle:   6054
	Max cycle:    21040
	Total cycles: 50
	Mean cycle:   5557
	Mean depth cycle:  128
	Last queue length: 1496

Backfilling stats
	Total backfilled jobs (since last slurm start): 7
	Total backfilled jobs (since last stats cycle start): 7
	Total cycles: 2
	Last cycle when: Sat Dec 05 20:11:40 2026 (1796501500)
	Last cycle: 2001966
	Max cycle:  2001966
	Mean cycle: 2001477
	Last depth cycle: 72
	Depth Mean: 90
	Depth Mean (try depth): 90
	Last queue length: 1503
	Queue length mean: 1498

Remote Procedure Call statistics by message type
	REQUEST_SUBMIT_BATCH_JOB                ( 4003) count:30     ave_time:47951  total_time:1438551
	REQUEST_JOB_INFO                        ( 2003) count:12     ave_time:49055  total_time:588660

Remote Procedure Call statistics by user
	root            (       0) count:42     ave_time:48272  total_time:2027211
`

// The counters the report uses, from every section.
func TestParseSdiag(t *testing.T) {
	s, err := ParseSdiag(sdiagOut)
	if err != nil {
		t.Fatal(err)
	}
	want := &Sdiag{JobsSubmitted: 30, JobsStarted: 12, JobsPending: 1925, JobsRunning: 376, ServerThreads: 3,
		Main: MainSched{LastUs: 6054, MaxUs: 21040, MeanUs: 5557, Cycles: 50, MeanDepth: 128, QueueLen: 1496},
		Backfill: Backfill{Cycles: 2, LastDepth: 72, DepthMean: 90, DepthTryMean: 90, LastUs: 2001966, MaxUs: 2001966, MeanUs: 2001477,
			Backfilled: 7, QueueLen: 1503, QueueLenMean: 1498},
		ByType: map[string]RPC{"REQUEST_SUBMIT_BATCH_JOB": {30, 1438551}, "REQUEST_JOB_INFO": {12, 588660}},
		ByUser: map[string]RPC{"root": {42, 2027211}}}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	// 1,438,551 + 588,660 µs
	if got := s.Total(); got != (RPC{42, 2027211}) {
		t.Errorf("Total = %+v, want 42 RPCs, 2027211 µs", got)
	}
}

// Output without the main scheduler's section (an error message, a
// truncated answer) is refused.
func TestParseSdiagRefuses(t *testing.T) {
	if _, err := ParseSdiag("sdiag: error: Unable to contact slurm controller"); err == nil {
		t.Error("want an error")
	}
}
