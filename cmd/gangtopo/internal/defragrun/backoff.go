package defragrun

import (
	"time"
)

// Backing a gang off after a plan was carried out for it, so that no gang
// gets fresh victims every round: a plan that did not start its gang (the
// gang needs more than the room, or something else keeps it: a limit, a
// node that went down) would otherwise be carried out again as soon as
// its hold ends, and again after that, each time requeuing other jobs.
//
// The record is the audit log (Episodes), so a restarted controller, or
// the backup that took over, backs off as this one did. For each gang,
// the carried plans (Episode.Carried: a hold that requeued something, or a
// preemption pin) within cap before now weigh 1 each, and 2 when the plan
// did not start the gang (its hold or pin ended with the gang still
// waiting); the gang is not planned for again before
//
//	last plan + base x 2^(weight-1), at most cap
//
// base is defrag.auto.retry (10 min by default), cap defrag.requeue_window
// (24 h): a plan that started its gang keeps it back for 10 min should it
// wait again (requeued by someone, preempted), one that did not for 20
// min, two that did not for 80 min, three for 5 h 20 min.

// Backoff says until when no new plan is made for gang (zero: none is
// due), from the episodes of the audit log.
func Backoff(eps []Episode, gang string, base, cap time.Duration, now time.Time) time.Time {
	weight := 0
	var last time.Time
	for i := range eps {
		e := &eps[i]
		if e.Gang != gang || !e.Carried() || now.Sub(e.At) >= cap {
			continue
		}
		weight++
		if e.Ended && !e.Started() {
			weight++
		}
		if e.At.After(last) {
			last = e.At
		}
	}
	if weight == 0 {
		return time.Time{}
	}
	wait := base
	for i := 1; i < weight && wait < cap; i++ {
		wait *= 2
	}
	return last.Add(min(wait, cap))
}
