package slurmstate

import (
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

// A job's gangtopo request and decision are read from the decision line
// the job_submit plugin writes into the job's AdminComment
// ("gangtopo v1 placed request=leaf:required ..."): users cannot set
// AdminComment (slurmctld refuses it from anyone but an administrator), so
// a job's --comment cannot forge a request or a decision. With
// decision_field: comment the plugin writes into the user's own Comment,
// which is not believed: such jobs show no request.

// requestFrom returns the request and the accepted GPU models of the
// decision in an AdminComment; "" and nil when there is none.
func requestFrom(adminComment string) (string, []string) {
	d, err := jobsubmit.ParseDecision(adminComment)
	if err != nil {
		return "", nil
	}
	return d.Request, d.Models
}

// DecisionKind is a verdict, and for untouched jobs the cause.
type DecisionKind struct {
	Verdict jobsubmit.Verdict
	Cause   jobsubmit.Cause
}

// Decisions counts the gangtopo decisions recorded in the AdminComments of
// every job Slurm lists (pending, running, and finished ones it still
// remembers), by kind.
type Decisions map[DecisionKind]int

func (d Decisions) add(adminComment string) {
	if d == nil || adminComment == "" {
		return
	}
	if dec, err := jobsubmit.ParseDecision(adminComment); err == nil {
		d[DecisionKind{dec.Verdict, dec.Cause}]++
	}
}

// Total is the number of jobs with a decision.
func (d Decisions) Total() int {
	n := 0
	for _, k := range d {
		n += k
	}
	return n
}

// NotCovered is the number of jobs left as submitted because the cluster
// file does not cover their partition or nodes.
func (d Decisions) NotCovered() int {
	return d[DecisionKind{jobsubmit.VerdictUntouched, jobsubmit.CauseNotCovered}]
}

// MostlyNotCovered says whether most decided jobs (and at least min) were
// left as submitted for want of coverage: the cluster file is out of date,
// or was built without the jobs' partitions, and gangtopo is in effect off.
func (d Decisions) MostlyNotCovered(min int) bool {
	n := d.NotCovered()
	return n >= min && 2*n > d.Total()
}
