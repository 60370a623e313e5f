package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// TestCheckStarts pairs recorded and predicted starts by hand: on time
// within max(60 s, 5% of the recorded wait).
func TestCheckStarts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	h := &historyInfo{origin: t0, jobs: []traces.SacctJob{
		{ID: "1", Eligible: at(0), Start: at(100), End: at(200), Scheduler: "main"},       // predicted 150: 50 s off, on time
		{ID: "2", Eligible: at(0), Start: at(2000), End: at(2100), Scheduler: "backfill"}, // predicted 2090: 90 s off, 5% of 2000 = 100: on time
		{ID: "3", Eligible: at(0), Start: at(100), End: at(200), Scheduler: "backfill"},   // predicted 200: 100 s late, a miss
		{ID: "4", Eligible: at(0), State: "CANCELLED", End: at(50)},                       // never started in the record
		{ID: "5", Eligible: at(0), Start: at(10), End: at(20), Scheduler: "main"},         // never started by the model
	}}
	nan := math.NaN()
	res := &queue.Result{Jobs: make([]queue.Job, 5), Outcomes: []queue.Outcome{
		{Start: 150, By: "main"}, {Start: 2090, By: "backfill"}, {Start: 200, By: "main"}, {Start: nan, Cancelled: true}, {Start: nan, Cancelled: true}}}
	for i := range res.Jobs {
		res.Jobs[i].GPUs = 1
	}
	checks, never, neverBoth := checkStarts(h, res)
	var onTime []bool
	for _, c := range checks {
		onTime = append(onTime, c.onTime)
	}
	if diff := cmp.Diff([]bool{true, true, false, false}, onTime); diff != "" {
		t.Errorf("on time (-want +got)\n%s", diff)
	}
	if never != 1 || neverBoth != 1 {
		t.Errorf("never started: %d in the record, %d in both; want 1, 1", never, neverBoth)
	}
	var b bytes.Buffer
	h.writeCheck(&b, res)
	for _, want := range []string{"target: at least 90% on time: 50.0% (2 of 4): MISSED",
		"1  later, by the model's main pass where slurmctld's backfill pass started it",
		"1  the model never started it (cancelled while it waited there)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the check's output lacks %q:\n%s", want, b.String())
		}
	}
}
