package defrag

import (
	"errors"
	"testing"
	"time"
)

func TestHistoryLimits(t *testing.T) {
	l := Limits{MaxPerHour: 3, BudgetFraction: 0.02, BudgetWindow: 24 * time.Hour, Window: 6 * time.Hour}
	// 16 GPUs x 24 h x 2% = 7.68 GPU-hours of budget a day
	var h History
	h.Add(Record{At: t0.Add(-20 * time.Hour), Kind: Requeued, Job: "1", GPUs: 1, Lost: 5})
	h.Add(Record{At: t0.Add(-30 * time.Minute), Kind: Requeued, Job: "2", GPUs: 1, Lost: 1})
	h.Add(Record{At: t0.Add(-20 * time.Minute), Kind: Started, Job: "9", GPUs: 8})
	h.Add(Record{At: t0.Add(-10 * time.Minute), Kind: Requeued, Job: "3", GPUs: 1, Lost: 1})

	hour, lost := h.Spent(t0, l)
	if hour != 2 || lost != 7 {
		t.Errorf("Spent = %d requeues, %g GPU-h; want 2 (jobs 2, 3) and 7 (5 + 1 + 1)", hour, lost)
	}
	// 2 + 1 = 3 requeues, 7 + 0.5 = 7.5 <= 7.68: allowed
	if err := h.Allow(1, 0.5, 16, t0, l); err != nil {
		t.Errorf("Allow(1, 0.5) = %v, want nil", err)
	}
	// 2 + 2 = 4 > 3 requeues an hour
	var le *LimitError
	if err := h.Allow(2, 0.1, 16, t0, l); !errors.As(err, &le) || le.Limit != "rate" {
		t.Errorf("Allow(2, 0.1) = %v, want the rate limit", err)
	}
	// 7 + 1 = 8 > 7.68
	if err := h.Allow(1, 1, 16, t0, l); !errors.As(err, &le) || le.Limit != "budget" {
		t.Errorf("Allow(1, 1) = %v, want the budget", err)
	}
	// job 1 was requeued 20 h ago (window 6 h): free again; job 3 10 min
	// ago and gang 9 started 20 min ago: protected
	for job, want := range map[string]bool{"1": false, "3": true, "9": true, "4": false} {
		if got := h.Protected(job, t0, l); got != want {
			t.Errorf("Protected(%s) = %v, want %v", job, got, want)
		}
	}
	// a day later everything is forgotten
	h.Forget(t0.Add(25*time.Hour), l.Keep())
	if hour, lost := h.Spent(t0.Add(25*time.Hour), l); hour != 0 || lost != 0 || h.Protected("3", t0.Add(25*time.Hour), l) {
		t.Errorf("after Forget: %d, %g, protected %v", hour, lost, h.Protected("3", t0.Add(25*time.Hour), l))
	}
}
