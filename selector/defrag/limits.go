package defrag

import (
	"fmt"
	"time"
)

// Limits bound what defragmentation does over time, whoever acts
// (`gangtopo defrag apply`, the controller, a simulator): they are checked
// against the History of what was done.
type Limits struct {
	// MaxPerHour bounds the requeues within any hour (each is an RPC
	// taking slurmctld's job write lock, and a restart for someone).
	MaxPerHour int
	// BudgetFraction bounds the GPU-hours of work lost to requeues within
	// BudgetWindow, as a fraction of the cluster's GPU-hours in that time
	// (0.02: 2%).
	BudgetFraction float64
	BudgetWindow   time.Duration
	// Window: a job requeued is not requeued again within it, and a gang a
	// plan started is not taken within it either (two big gangs would
	// otherwise take each other's room in turn).
	Window time.Duration
}

// Kind is what a Record says was done.
type Kind uint8

// Kinds of record.
const (
	// Requeued: a running job was requeued for a plan.
	Requeued Kind = iota
	// Started: a plan was carried out for a pending gang (the gang the
	// freed room is held for); it is protected for Limits.Window.
	Started
)

// Record is one action of the past.
type Record struct {
	At   time.Time
	Kind Kind
	Job  string
	GPUs int
	// Lost is the GPU-hours of work a requeue lost (CostModel.Lost).
	Lost float64
}

// History is what was done, in time order. The zero value is empty and
// ready.
type History struct {
	recs []Record
	last map[string]time.Time // job -> its latest record
}

// Add appends a record; records must come in time order.
func (h *History) Add(r Record) {
	if h.last == nil {
		h.last = map[string]time.Time{}
	}
	h.recs = append(h.recs, r)
	if r.At.After(h.last[r.Job]) {
		h.last[r.Job] = r.At
	}
}

// Protected says whether job was requeued, or started by a plan, within
// the window before now: it may not be taken.
func (h *History) Protected(job string, now time.Time, l Limits) bool {
	t, ok := h.last[job]
	return ok && now.Sub(t) < l.Window
}

// Spent is what the limits have used by now: the requeues in the last
// hour and the GPU-hours lost within the budget window.
func (h *History) Spent(now time.Time, l Limits) (lastHour int, lost float64) {
	for i := len(h.recs) - 1; i >= 0; i-- {
		r := &h.recs[i]
		age := now.Sub(r.At)
		if age >= max(l.BudgetWindow, time.Hour) {
			break
		}
		if r.Kind != Requeued {
			continue
		}
		if age < time.Hour {
			lastHour++
		}
		if age < l.BudgetWindow {
			lost += r.Lost
		}
	}
	return lastHour, lost
}

// Budget is the GPU-hours the budget allows within its window on a
// cluster of gpus GPUs.
func (l Limits) Budget(gpus int) float64 {
	return l.BudgetFraction * float64(gpus) * l.BudgetWindow.Hours()
}

// LimitError says which limit a plan would break.
type LimitError struct {
	Limit string // "rate" or "budget"
	Msg   string
}

func (e *LimitError) Error() string { return e.Msg }

// Allow checks that requeuing n more jobs losing lost GPU-hours now keeps
// within the limits on a cluster of gpus GPUs.
func (h *History) Allow(n int, lost float64, gpus int, now time.Time, l Limits) error {
	hour, spent := h.Spent(now, l)
	if l.MaxPerHour > 0 && hour+n > l.MaxPerHour {
		return &LimitError{"rate", fmt.Sprintf("rate limit: %d requeues in the last hour, %d more would pass defrag.max_requeues_per_hour (%d)", hour, n, l.MaxPerHour)}
	}
	if budget := l.Budget(gpus); spent+lost > budget {
		return &LimitError{"budget", fmt.Sprintf("lost-work budget: %.1f GPU-hours lost in the last %s, %.1f more would pass the budget of %.1f (defrag.budget_percent %.4g%% of %d GPUs)",
			spent, l.BudgetWindow, lost, budget, 100*l.BudgetFraction, gpus)}
	}
	return nil
}

// Forget drops records older than keep before now (the longest of the
// windows is what the limits need).
func (h *History) Forget(now time.Time, keep time.Duration) {
	i := 0
	for i < len(h.recs) && now.Sub(h.recs[i].At) >= keep {
		i++
	}
	if i == 0 {
		return
	}
	h.recs = append(h.recs[:0], h.recs[i:]...)
	for id, t := range h.last {
		if now.Sub(t) >= keep {
			delete(h.last, id)
		}
	}
}

// Keep is how far back a History must reach for these limits.
func (l Limits) Keep() time.Duration {
	return max(l.BudgetWindow, l.Window, time.Hour)
}
