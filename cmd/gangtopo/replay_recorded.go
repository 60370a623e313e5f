package main

import (
	"math"
	"strconv"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// What really happened, in the replay's terms: the history's own starts
// and ends as a queue.Result, so that its waits, utilisation and stranded
// GPU-hours sit in the same table as each policy's. What sacct does not
// say (which GPUs a job held, hence the tier it reached) is left out.

// recordedPolicy names the record's row.
const recordedPolicy = "recorded"

// recordedResult builds the record's result over the replayed jobs.
func (h *historyInfo) recordedResult(jobs []queue.Job, gpus int) *queue.Result {
	res := &queue.Result{Policy: recordedPolicy, GPUs: gpus, Jobs: jobs, Outcomes: make([]queue.Outcome, len(jobs))}
	for i := range h.jobs {
		j, o := &h.jobs[i], &res.Outcomes[i]
		o.Slowdown = 1
		if j.Start.IsZero() || !j.End.After(j.Start) && j.State == "CANCELLED" {
			o.Start, o.End, o.Cancelled = math.NaN(), math.NaN(), true
			continue
		}
		o.Start, o.End, o.By = j.Start.Sub(h.origin).Seconds(), j.End.Sub(h.origin).Seconds(), j.Scheduler
	}
	return res
}

func fitsOne(waiting map[int]int, free int) bool {
	for g := range waiting {
		if g <= free {
			return true
		}
	}
	return false
}

// historyTable is what changes, per policy against the record: waits by
// size class, stranded GPU-hours, gangs in their tightest domain, useful
// utilisation, requeues and the work they lost.
func (r *replayReport) historyTable() [][]string {
	if r.info.History == "" || r.recorded == nil {
		return nil
	}
	head := []string{"policy", "GPU util %", "useful %", "stranded GPU-h"}
	for _, c := range queue.Classes {
		head = append(head, "wait "+c.Name+" mean min")
	}
	head = append(head, "tightest %", "requeues", "GPU-h lost", "cancelled waiting")
	t := [][]string{head}
	rows := append([]queue.Summary{*r.recorded}, r.summaries()...)
	for i, s := range rows {
		line := []string{s.Policy, replayPct(s.Util), replayPct(s.Useful), strconv.FormatFloat(s.StrandedGPUHours, 'f', 2, 64)}
		for _, cs := range s.Classes {
			line = append(line, replayMinutes(cs.MeanWait))
		}
		tight := replayPct(s.Tight)
		if i == 0 {
			tight = "-" // sacct does not say which GPUs a job held
		}
		line = append(line, tight, strconv.Itoa(s.Requeues), strconv.FormatFloat(s.LostGPUHours, 'f', 2, 64), strconv.Itoa(s.Cancelled))
		t = append(t, line)
	}
	return t
}

func (r *replayReport) summaries() []queue.Summary {
	out := make([]queue.Summary, len(r.rows))
	for i := range r.rows {
		out[i] = r.rows[i].s
	}
	return out
}

// recordedRequeues counts the runs the record says were requeued or
// preempted (each a row of its own with sacct -D) and the GPU-hours they
// ran: work lost, as a policy's requeues lose it.
func (h *historyInfo) recordedRequeues() (n int, gpuHours float64) {
	for i := range h.jobs {
		j := &h.jobs[i]
		if (j.State == "REQUEUED" || j.State == "PREEMPTED") && j.End.After(j.Start) && !j.Start.IsZero() {
			n++
			gpuHours += float64(j.GPUs) * j.End.Sub(j.Start).Hours()
		}
	}
	return n, gpuHours
}
