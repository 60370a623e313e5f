package main

import (
	"math"
	"sort"
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
	res.StrandedGPUSeconds = stranded(res)
	return res
}

// stranded integrates the free GPUs while a waiting job would have fitted
// them by count, over a result's starts and ends.
func stranded(res *queue.Result) float64 {
	type ev struct {
		at         float64
		order      int // ends and leaving first, then starts, then arrivals
		gpus, free int
		wait       int // +1 a job starts waiting, -1 it stops
	}
	var evs []ev
	for i, j := range res.Jobs {
		o := &res.Outcomes[i]
		leave := o.Start
		if o.Cancelled {
			leave = j.Cancel
		}
		if o.Rejected || math.IsNaN(leave) {
			continue
		}
		evs = append(evs, ev{at: j.Submit, order: 2, gpus: j.GPUs, wait: 1}, ev{at: leave, order: 0, gpus: j.GPUs, wait: -1})
		if !o.Cancelled {
			evs = append(evs, ev{at: o.Start, order: 1, gpus: j.GPUs, free: -j.GPUs}, ev{at: o.End, order: 0, gpus: j.GPUs, free: j.GPUs})
		}
	}
	sort.SliceStable(evs, func(a, b int) bool {
		if evs[a].at != evs[b].at {
			return evs[a].at < evs[b].at
		}
		return evs[a].order < evs[b].order
	})
	waiting := map[int]int{}
	free, total, last := res.GPUs, 0.0, math.Inf(-1)
	for _, e := range evs {
		if free > 0 && e.at > last && fitsOne(waiting, free) {
			total += float64(free) * (e.at - last)
		}
		last = e.at
		free += e.free
		if waiting[e.gpus] += e.wait; waiting[e.gpus] == 0 {
			delete(waiting, e.gpus)
		}
	}
	return total
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
