package slurmscale

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

// queueJob is what the harness reads of a job from `squeue --json`: enough
// to count jobs by state and to check what the plugin decided (the
// decision line in the AdminComment, which users cannot write).
type queueJob struct {
	ID           string
	State        string // PENDING, RUNNING, ...
	Reason       string
	AdminComment string
	// Tasks is how many jobs the record stands for: a pending array's
	// record holds its tasks not yet started ("0-19%2" less those split
	// off), 1 otherwise.
	Tasks int
}

// squeueDoc is the part of `squeue --json` read here, in every layout
// from 22.05's (job_state a string, job_id a number) to 26.05's
// (job_state a list of strings; numbers as {set, number} in some fields).
type squeueDoc struct {
	Jobs []struct {
		JobID        json.RawMessage `json:"job_id"`
		JobState     json.RawMessage `json:"job_state"`
		StateReason  string          `json:"state_reason"`
		AdminComment string          `json:"admin_comment"`
		ArrayTasks   string          `json:"array_task_string"`
	} `json:"jobs"`
}

// parseSqueue reads `squeue --json` output.
func parseSqueue(data []byte) ([]queueJob, error) {
	var doc squeueDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("squeue --json: %w", err)
	}
	out := make([]queueJob, 0, len(doc.Jobs))
	for i, j := range doc.Jobs {
		id, err := number(j.JobID)
		if err != nil {
			return nil, fmt.Errorf("squeue --json: jobs[%d].job_id: %w", i, err)
		}
		state, err := firstString(j.JobState)
		if err != nil {
			return nil, fmt.Errorf("squeue --json: job %d: job_state: %w", id, err)
		}
		out = append(out, queueJob{ID: strconv.FormatInt(id, 10), State: state, Reason: j.StateReason,
			AdminComment: j.AdminComment, Tasks: arrayCount(j.ArrayTasks)})
	}
	return out, nil
}

// number reads 42 or {"set": true, "number": 42}.
func number(raw json.RawMessage) (int64, error) {
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var v struct {
		Set    bool  `json:"set"`
		Number int64 `json:"number"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || !v.Set {
		return 0, fmt.Errorf("%s is not a number", raw)
	}
	return v.Number, nil
}

// firstString reads "PENDING" or ["PENDING", ...].
func firstString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil || len(l) == 0 {
		return "", fmt.Errorf("%s is neither a state nor a list of states", raw)
	}
	return l[0], nil
}

// arrayCount counts the tasks of "0-19%2" or "3,5-7" (1 for "": not an
// array's pending record).
func arrayCount(s string) int {
	if s == "" {
		return 1
	}
	spec, _, _ := strings.Cut(s, "%")
	n := 0
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		switch {
		case err1 != nil:
		case !isRange:
			n++
		case err2 == nil && b >= a:
			n += b - a + 1
		}
	}
	return max(n, 1)
}

// Verdicts counts what the plugin decided about a set of jobs.
type Verdicts struct {
	// Engine: decisions the engine made (placed, waiting, wider) with the
	// snapshot generation they used; Untouched: left as submitted, by why;
	// None: no decision line at all (the plugin was off, or never called).
	Engine    int
	Untouched map[string]int
	Refused   int
	None      int
	// NoneSeen: a few of the jobs with no decision line, "ID: admin
	// comment", for the check's message.
	NoneSeen []string
}

// countVerdicts reads the decision lines of the jobs whose IDs are in want.
func countVerdicts(jobs []queueJob, want map[string]bool) Verdicts {
	v := Verdicts{Untouched: map[string]int{}}
	for _, j := range jobs {
		if !want[j.ID] {
			continue
		}
		d, err := jobsubmit.ParseDecision(j.AdminComment)
		switch {
		case err != nil:
			v.None++
			if len(v.NoneSeen) < 3 {
				v.NoneSeen = append(v.NoneSeen, fmt.Sprintf("%s (%s, %s): %q", j.ID, j.State, j.Reason, j.AdminComment))
			}
		case d.Verdict == jobsubmit.VerdictUntouched:
			why := string(d.Cause)
			if why == "" {
				why = d.Text
			}
			v.Untouched[why]++
		case d.Verdict == jobsubmit.VerdictRefused:
			v.Refused++
		case d.Snapshot > 0:
			v.Engine++
		default:
			v.Untouched["no snapshot generation"]++
		}
	}
	return v
}

// UntouchedTotal sums Untouched.
func (v Verdicts) UntouchedTotal() int {
	n := 0
	for _, c := range v.Untouched {
		n += c
	}
	return n
}
