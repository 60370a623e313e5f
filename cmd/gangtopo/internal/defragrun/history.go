package defragrun

import (
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
)

// What was done is read back from the audit log (actuate.Audit.Changes:
// each change's outcome line, or its intent line when the process ended
// before writing the outcome, which counts as made), so that the command
// and the controller, a restarted controller, or the backup that took
// over, share one record: the limits' History, each hold's plan (Tend)
// and each gang's back-off (Backoff).

// History builds the limits' History from the audit's changes: every
// requeue that took, or may have (it ran out of time: slurmctld may have
// done it after the client was killed), and every gang a plan held room
// for (its attach). Lines written before the door (no ref: one "hold"
// line once the gang was attached) count as before.
func History(changes []actuate.Entry) *defrag.History {
	h := &defrag.History{}
	for _, e := range changes {
		switch {
		case e.Action == "requeue" && mayHaveTaken(e.Result):
			h.Add(defrag.Record{At: e.Time, Kind: defrag.Requeued, Job: e.Job, GPUs: e.GPUs, Lost: e.LostGPUHours})
		case e.Result != actuate.ResultOK:
		case e.Action == "attach", e.Action == "hold" && e.Ref == "":
			h.Add(defrag.Record{At: e.Time, Kind: defrag.Started, Job: e.Gang, GPUs: e.GPUs})
		}
	}
	return h
}

// ReadHistory reads the audit log's changes of the last keep before now:
// the History and each gang's plans (for Backoff). bad counts the lines
// that do not read.
func ReadHistory(a actuate.Audit, now time.Time, keep time.Duration) (*defrag.History, []Episode, int, error) {
	changes, bad, err := a.Changes(now, keep)
	if err != nil {
		return nil, nil, bad, err
	}
	return History(changes), Episodes(changes), bad, nil
}

// mayHaveTaken says whether a change's outcome means it was made, or may
// have been: ok, or its command ran out of time.
func mayHaveTaken(result string) bool {
	return result == actuate.ResultOK || strings.Contains(result, slurmstate.ErrUpdateTimeout.Error())
}

// Episode is one plan carried out for a gang, from the audit log: a hold
// from its reservation to its end, or a preemption pin from its pin to
// its unpin.
type Episode struct {
	Gang, Reservation string
	// At is when the hold (or pin) was made; Pin says it was a pin.
	At  time.Time
	Pin bool
	// Attached: the gang was put in the reservation. Requeues counts the
	// requeues recorded for it (any outcome); Failed is the first one's
	// outcome that went wrong for another reason than the job having
	// ended ("" when none did).
	Attached bool
	Requeues int
	Failed   string
	// Ended: the hold (or pin) was ended, at EndAt, with EndReason.
	Ended     bool
	EndAt     time.Time
	EndReason string
}

// Carried says whether the plan was carried out: room held and something
// requeued, or a pin made.
func (e *Episode) Carried() bool { return e.Pin || e.Attached && e.Requeues > 0 }

// Started says whether the gang started from it: its hold ended because
// the gang runs. Open or ended otherwise, it did not (yet).
func (e *Episode) Started() bool { return e.Ended && strings.HasPrefix(e.EndReason, ReasonRuns) }

// Episodes groups the audit's changes, in time order, into each gang's
// plans.
func Episodes(changes []actuate.Entry) []Episode {
	var out []Episode
	open := map[string]int{} // reservation or pinned job -> index in out
	for _, c := range changes {
		key := c.Reservation
		if c.Action == "pin" || c.Action == "unpin" {
			key = "pin " + c.Job
		}
		i, isOpen := open[key]
		switch {
		case c.Action == "hold" && mayHaveTaken(c.Result):
			open[key] = len(out)
			out = append(out, Episode{Gang: c.Gang, Reservation: c.Reservation, At: c.Time})
		case c.Action == "pin" && c.Result == actuate.ResultOK && c.Duty == duty:
			open[key] = len(out)
			out = append(out, Episode{Gang: c.Job, At: c.Time, Pin: true})
		case !isOpen:
		default:
			out[i].add(c)
			if out[i].Ended {
				delete(open, key)
			}
		}
	}
	return out
}

// add takes one more change of the episode's.
func (e *Episode) add(c actuate.Entry) {
	switch c.Action {
	case "attach":
		e.Attached = e.Attached || mayHaveTaken(c.Result)
	case "requeue":
		e.Requeues++
		if e.Failed == "" && !mayHaveTaken(c.Result) && !endedMsg(c.Result) {
			e.Failed = c.Result
		}
	case "release", "abandon", "unpin":
		if mayHaveTaken(c.Result) {
			e.Ended, e.EndAt, e.EndReason = true, c.Time, c.Reason
		}
	}
}
