// Package faults is the table of faults and outcomes that the end-to-end
// suites print (issue 22: "after each fault: no job lost, no job held or
// pinned for ever, no job requeued twice, no QOS or account setting left
// that gangtopo did not put back, the snapshot age within
// max_snapshot_age, and a clear line in the log"). Each fault test checks
// its outcomes itself and records one row; the suite's TestMain prints the
// rows of the tests that ran, passed or not, at its end.
package faults

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
)

// Outcome is one checked outcome: "ok", or what went wrong ("-": not
// applicable to this fault).
type Outcome string

// Check makes an outcome from a condition and what to say when it fails.
func Check(ok bool, failure string, args ...any) Outcome {
	if ok {
		return "ok"
	}
	return Outcome(fmt.Sprintf(failure, args...))
}

// NA is an outcome that does not apply to a fault.
const NA Outcome = "-"

// Row is one fault's outcomes.
type Row struct {
	Fault string
	// NoJobLost: every job the test started is running, pending or ended
	// as itself (not cancelled or killed by gangtopo's doing).
	NoJobLost Outcome
	// NothingHeldForEver: no reservation, pin or priority-0 hold of
	// gangtopo's left on any job or node.
	NothingHeldForEver Outcome
	// NoDoubleRequeue: no job requeued twice for one plan.
	NoDoubleRequeue Outcome
	// NothingLeft: no QOS, account or job setting gangtopo made is left
	// that it did not put back.
	NothingLeft Outcome
	// SnapshotFresh: the published snapshot stayed younger than
	// max_snapshot_age.
	SnapshotFresh Outcome
	// LogLine: the line gangtopo logged about the fault ("" when none:
	// a failure).
	LogLine string
}

func (r Row) passed() bool {
	for _, o := range []Outcome{r.NoJobLost, r.NothingHeldForEver, r.NoDoubleRequeue, r.NothingLeft, r.SnapshotFresh} {
		if o != "ok" && o != NA {
			return false
		}
	}
	return r.LogLine != ""
}

var (
	mu   sync.Mutex
	rows []Row
)

// Record adds a fault's row (a test records exactly one per fault it
// injects).
func Record(r Row) {
	mu.Lock()
	defer mu.Unlock()
	rows = append(rows, r)
}

// Print writes the table of the rows recorded, in fault order, under a
// heading naming the Slurm release; nothing when no fault test ran.
func Print(w io.Writer, release string) {
	mu.Lock()
	defer mu.Unlock()
	if len(rows) == 0 {
		return
	}
	sorted := append([]Row(nil), rows...)
	sort.SliceStable(sorted, func(i, k int) bool { return sorted[i].Fault < sorted[k].Fault })
	fmt.Fprintf(w, "\nfaults x outcomes on Slurm %s\n", release)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "fault\tno job lost\tnothing held for ever\tno double requeue\tnothing left\tsnapshot fresh\tverdict\tlog line")
	for _, r := range sorted {
		verdict := "PASS"
		if !r.passed() {
			verdict = "FAIL"
		}
		log := r.LogLine
		if log == "" {
			log = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Fault, r.NoJobLost, r.NothingHeldForEver, r.NoDoubleRequeue,
			r.NothingLeft, r.SnapshotFresh, verdict, strings.ReplaceAll(trim(log, 120), "\t", " "))
	}
	tw.Flush()
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
