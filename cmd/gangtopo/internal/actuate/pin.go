package actuate

import (
	"slices"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// Pinning a pending job to nodes (its ReqNodeList) steers Slurm's own
// scheduler or preemption to one domain; it is also the one change that
// can keep a job waiting for ever (a pinned node goes down, the victims
// outlive the plan). So a pin is made in one update together with its
// mark (Mark: owner, expiry, the QOS to put back), and undone when the
// mark expires, by whichever controller acts then.

// maxPinNodes bounds the node lists compared when a pin is undone: a
// ReqNodeList is at most the cluster.
const maxPinNodes = 1 << 16

// PinChange is the update that pins job (its update target) to nodes:
// ReqNodeList, the mark in its AdminComment (adminComment is the field as
// Slurm holds it now), and more (e.g. QOS=...). e carries the audit
// line's other fields.
func PinChange(e Entry, job, adminComment string, m Mark, more ...string) Change {
	e.Action, e.Job, e.Nodes = "pin", job, m.Nodes
	args := append([]string{"update", "JobId=" + job, "ReqNodeList=" + m.Nodes, "AdminComment=" + WithMark(adminComment, m)}, more...)
	return Change{Entry: e, Cmd: "scontrol", Args: args}
}

// Pin is a pending job gangtopo pinned, as Slurm shows it now.
type Pin struct {
	Mark
	// Job names the job for scontrol update.
	Job string
	// ReqNodes and QOS are the job's now; AdminComment the field holding
	// the mark.
	ReqNodes, QOS, AdminComment string
}

// Pins lists the marked pending jobs of a poll.
func Pins(queued []slurmstate.PendingJob) []Pin {
	var out []Pin
	for _, pj := range queued {
		m, ok := ParseMark(pj.Facts.AdminComment)
		if !ok {
			continue
		}
		out = append(out, Pin{Mark: m, Job: pj.Target, ReqNodes: pj.Job.ReqNodes, QOS: pj.Facts.QOS, AdminComment: pj.Facts.AdminComment})
	}
	return out
}

// Expired says whether the pin's time is up at now.
func (p Pin) Expired(now time.Time) bool { return !now.Before(p.Until) }

// Undo is the update that takes the pin out: the mark removed, and, when
// the job is still pinned to what gangtopo set (not changed since by an
// administrator), its node list cleared and its QOS put back. reason goes
// into the audit line.
func (p Pin) Undo(duty, reason string) Change {
	args := []string{"update", "JobId=" + p.Job, "AdminComment=" + WithoutMark(p.AdminComment)}
	if p.stillOurs() {
		args = append(args, "ReqNodeList=")
		if p.Mark.QOS != "" && p.QOS != p.Mark.QOS {
			args = append(args, "QOS="+p.Mark.QOS)
		}
	}
	return Change{Entry: Entry{Action: "unpin", Job: p.Job, Nodes: p.ReqNodes, QOS: p.Mark.QOS, Duty: duty, Reason: reason},
		Cmd: "scontrol", Args: args, Undo: true}
}

// stillOurs says whether the job's node list is the one the mark records
// (as sets of nodes: Slurm may print the list in another form).
func (p Pin) stillOurs() bool {
	a, err1 := hostlist.ExpandAtMost(p.ReqNodes, maxPinNodes)
	b, err2 := hostlist.ExpandAtMost(p.Mark.Nodes, maxPinNodes)
	if err1 != nil || err2 != nil {
		return false
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
