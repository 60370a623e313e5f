package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// The timing check (--check-starts): the history replayed under the slurm
// model, each job's predicted start against the start slurmctld recorded.
// A job is on time when the two are within max(60 s, 5% of its recorded
// wait); the target is 90% of the jobs that started. Jobs the record says
// never started (cancelled while pending) are counted apart.

const (
	checkSlack   = 60.0 // seconds
	checkShare   = 0.05 // of the recorded wait
	checkTarget  = 0.90
	checkPolicy  = "slurm"
	checkMaxMiss = 25 // misses listed
)

// startCheck is one job of the check.
type startCheck struct {
	id, where         string
	gpus              int
	rec, pred, wait   float64 // recorded and predicted start, recorded wait (s)
	recBy, predBy     string
	predNever, onTime bool
}

func (c *startCheck) err() float64 { return c.pred - c.rec }

// checkStarts pairs the slurm policy's outcomes with the record.
func checkStarts(h *historyInfo, res *queue.Result) (checks []startCheck, neverRec, neverBoth int) {
	for i := range h.jobs {
		j, o := &h.jobs[i], &res.Outcomes[i]
		if j.Start.IsZero() || !j.End.After(j.Start) && j.State == "CANCELLED" {
			neverRec++
			if o.Cancelled || math.IsNaN(o.Start) {
				neverBoth++
			}
			continue
		}
		c := startCheck{id: j.ID, where: j.At, gpus: res.Jobs[i].GPUs, rec: j.Start.Sub(h.origin).Seconds(),
			wait: j.Start.Sub(j.Eligible).Seconds(), recBy: orDash(j.Scheduler), predBy: orDash(o.By), pred: o.Start}
		if math.IsNaN(o.Start) {
			c.predNever = true
		} else {
			c.onTime = math.Abs(c.err()) <= max(checkSlack, checkShare*c.wait)
		}
		checks = append(checks, c)
	}
	return checks, neverRec, neverBoth
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeCheck prints the check's table by size class, the verdict and the
// misses with their reasons.
func (h *historyInfo) writeCheck(w io.Writer, res *queue.Result) {
	checks, neverRec, neverBoth := checkStarts(h, res)
	fmt.Fprintf(w, "\ntiming check: %s's predicted start of each job against the recorded one; on time within max(%g s, %g%% of the recorded wait)\n",
		checkPolicy, checkSlack, 100*checkShare)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPUs\tjobs\ton time\t%\tmean error s\tmedian |error| s\tp95 |error| s\tmean recorded wait s")
	var all []startCheck
	for _, cl := range queue.Classes {
		var in []startCheck
		for _, c := range checks {
			if c.gpus >= cl.Lo && c.gpus <= cl.Hi {
				in = append(in, c)
			}
		}
		all = append(all, in...)
		if len(in) > 0 {
			fmt.Fprintln(tw, checkRow(cl.Name, in))
		}
	}
	fmt.Fprintln(tw, checkRow("all", all))
	tw.Flush()
	onTime := 0
	for _, c := range checks {
		if c.onTime {
			onTime++
		}
	}
	share := float64(onTime) / float64(max(len(checks), 1))
	verdict := "met"
	if share < checkTarget {
		verdict = "MISSED"
	}
	fmt.Fprintf(w, "target: at least %.0f%% on time: %.1f%% (%d of %d): %s\n", 100*checkTarget, 100*share, onTime, len(checks), verdict)
	fmt.Fprintf(w, "%d jobs never started in the record (cancelled while pending); the model did not start %d of them either\n", neverRec, neverBoth)
	writeMisses(w, checks)
}

func checkRow(name string, cs []startCheck) string {
	var errs []float64
	onTime := 0
	wait, signed := 0.0, 0.0
	for _, c := range cs {
		if c.onTime {
			onTime++
		}
		if !c.predNever {
			errs = append(errs, math.Abs(c.err()))
			signed += c.err()
		}
		wait += c.wait
	}
	sort.Float64s(errs)
	q := func(p float64) string {
		if len(errs) == 0 {
			return "-"
		}
		return strconv.FormatFloat(errs[int(math.Ceil(p*float64(len(errs))))-1], 'f', 0, 64)
	}
	// mean error: predicted - recorded, so negative is early
	return fmt.Sprintf("%s\t%d\t%d\t%s\t%+.1f\t%s\t%s\t%.0f", name, len(cs), onTime, replayPct(float64(onTime)/float64(max(len(cs), 1))),
		signed/float64(max(len(errs), 1)), q(0.5), q(0.95), wait/float64(max(len(cs), 1)))
}

// writeMisses counts the misses by reason and lists the largest.
func writeMisses(w io.Writer, checks []startCheck) {
	var miss []startCheck
	reasons := map[string]int{}
	for _, c := range checks {
		if !c.onTime {
			miss = append(miss, c)
			reasons[missReason(&c)]++
		}
	}
	if len(miss) == 0 {
		return
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if reasons[keys[a]] != reasons[keys[b]] {
			return reasons[keys[a]] > reasons[keys[b]]
		}
		return keys[a] < keys[b]
	})
	fmt.Fprintf(w, "misses by reason:\n")
	for _, k := range keys {
		fmt.Fprintf(w, "  %4d  %s\n", reasons[k], k)
	}
	slices.SortStableFunc(miss, func(a, b startCheck) int {
		return -strings.Compare(fmt.Sprintf("%012.0f", math.Abs(a.err())), fmt.Sprintf("%012.0f", math.Abs(b.err())))
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "job\tGPUs\trecorded start s\tpredicted s\terror s\trecorded wait s\tslurm's pass\tmodel's pass\treason")
	for i, c := range miss {
		if i == checkMaxMiss {
			fmt.Fprintf(tw, "... %d more\n", len(miss)-checkMaxMiss)
			break
		}
		pred, e := "never", "-"
		if !c.predNever {
			pred, e = strconv.FormatFloat(c.pred, 'f', 0, 64), fmt.Sprintf("%+.0f", c.err())
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%.0f\t%s\t%s\t%s\n", c.id, c.gpus, c.rec, pred, e, c.wait, c.recBy, c.predBy, missReason(&c))
	}
	tw.Flush()
}

// missReason names what differs: whether the model started the job
// earlier or later, and by which pass against the one that started it in
// slurmctld (sacct's flags).
func missReason(c *startCheck) string {
	if c.predNever {
		return "the model never started it (cancelled while it waited there)"
	}
	dir := "later"
	if c.err() < 0 {
		dir = "earlier"
	}
	if c.recBy == c.predBy {
		return fmt.Sprintf("%s, both by the %s pass: the queue ahead of it differed", dir, c.recBy)
	}
	return fmt.Sprintf("%s, by the model's %s pass where slurmctld's %s pass started it", dir, c.predBy, c.recBy)
}
