package quotaexec

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// `gangtopo quota off` puts back what quota sync and the controller
// changed, from what Slurm records (gangtopo's QOS carry their Mark; a
// reclaim pin its actuate.Mark), not from gangtopo.yaml, so it also finds
// a QOS a gangtopo.yaml no longer names:
//
//  1. Accounts: each account an own QOS of gangtopo's is for gets back
//     the default QOS its record says ("-1" for none) and loses the own
//     QOS from its list, so new jobs go where they went before sync.
//  2. Pending jobs: a reclaim pin is taken out (the mark, and the node
//     list where it is still the pin's); a job in gangtopo's QOS goes to
//     its association's default (`QOS=`: what step 1 put back).
//  3. QOS: each of gangtopo's QOS that no job runs in is removed (Slurm
//     takes it out of every association's list then: checked on the
//     lab). One that jobs still run in stays, as they do: Slurm cannot
//     move a running job to another QOS, and a QOS removed under running
//     jobs leaves them without one (a requeue would then hold them, reason
//     InvalidQOS). Running quota off again once they ended removes it.
//
// Every change goes through the door as an undo (made while actions are
// switched off too).

// OffPlan is what `quota off` does, in order.
type OffPlan struct {
	Accounts []Change
	Jobs     []actuate.Change
	Remove   []Change
	// Kept are gangtopo's QOS left in place, and why.
	Kept []string
}

// Empty says whether nothing is left to put back.
func (p *OffPlan) Empty() bool {
	return len(p.Accounts)+len(p.Jobs)+len(p.Remove)+len(p.Kept) == 0
}

// PlanOff makes the plan from Slurm's accounting and a poll (squeue
// --json: the pending jobs with their AdminComment, the running jobs'
// QOS).
func PlanOff(acc *Accounting, st *slurmstate.State) OffPlan {
	var p OffPlan
	ours := oursByName(acc)
	for _, name := range sortedKeys(ours) {
		if c, ok := restoreAccount(acc, ours[name]); ok {
			p.Accounts = append(p.Accounts, c)
		}
	}
	p.Jobs = offJobs(st, ours)
	running := map[string][]string{}
	for _, j := range st.Jobs {
		if _, ok := ours[j.Facts.QOS]; ok {
			running[j.Facts.QOS] = append(running[j.Facts.QOS], j.ID)
		}
	}
	for _, q := range removalOrder(ours) {
		if ids := running[q.Name]; len(ids) > 0 {
			p.Kept = append(p.Kept, fmt.Sprintf("QOS %s: %d jobs still run in it (%s); it is removed by quota off once they end",
				q.Name, len(ids), strings.Join(firstN(ids, 8), ",")))
			continue
		}
		p.Remove = append(p.Remove, Change{What: "remove gangtopo's QOS (" + q.Mark.Role + ")", QOS: q.Name,
			Args: []string{"delete", "qos", "where", "name=" + q.Name}})
	}
	return p
}

// oursByName are the QOS gangtopo created.
func oursByName(acc *Accounting) map[string]QOS {
	out := map[string]QOS{}
	for n, q := range acc.QOS {
		if q.Ours {
			out[n] = q
		}
	}
	return out
}

// restoreAccount is step 1 for one of gangtopo's QOS (own ones only).
func restoreAccount(acc *Accounting, q QOS) (Change, bool) {
	a, ok := acc.Accounts[q.Mark.Account]
	if q.Mark.Role != RoleOwn || !ok {
		return Change{}, false
	}
	args := []string{"modify", "account", "where", "name=" + a.Account, "set"}
	var what []string
	if accountLists(a, q.Name) {
		args = append(args, "QOS-="+q.Name)
		what = append(what, "may no longer use "+q.Name)
	}
	if a.OwnDefault == q.Name {
		d, ok := acc.QOS[q.Mark.Default]
		switch {
		case q.Mark.Default == "":
			args = append(args, "DefaultQOS=-1")
			what = append(what, "default QOS "+q.Name+" -> none, as before sync")
		case ok && !d.Ours:
			args = append(args, "DefaultQOS="+d.Name)
			what = append(what, "default QOS "+q.Name+" -> "+d.Name+", as before sync")
		default:
			args = append(args, "DefaultQOS=-1")
			what = append(what, "default QOS "+q.Name+" -> none (it was "+q.Mark.Default+" before sync, which no longer exists)")
		}
	}
	if len(what) == 0 {
		return Change{}, false
	}
	return Change{What: strings.Join(what, "; "), QOS: q.Name, Account: a.Account, Args: args}, true
}

// accountLists says whether the account's own association lists qos.
func accountLists(a Assoc, qos string) bool {
	for _, l := range a.Lines {
		if l.User == "" && l.Partition == "" {
			return slices.Contains(l.QOS, qos)
		}
	}
	return false
}

// offJobs is step 2: the pending jobs' changes.
func offJobs(st *slurmstate.State, ours map[string]QOS) []actuate.Change {
	var out []actuate.Change
	for _, p := range actuate.Pins(st.Queued) {
		if p.By != "quota" {
			continue
		}
		c := p.Undo("quota", "quota off: the reclaim pin is taken out")
		if _, in := ours[p.QOS]; in {
			c.Args = append(slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "QOS=") }), "QOS=")
			c.Reason += "; the job leaves gangtopo's QOS " + p.QOS + " for its association's default"
		}
		out = append(out, c)
	}
	pinned := map[string]bool{}
	for _, c := range out {
		pinned[c.Job] = true
	}
	for _, pj := range st.Queued {
		if _, in := ours[pj.Facts.QOS]; !in || pinned[pj.Target] {
			continue
		}
		out = append(out, actuate.Change{Entry: actuate.Entry{Action: "qos", Job: pj.Target, QOS: pj.Facts.QOS, Duty: "quota",
			Reason: "quota off: the job leaves gangtopo's QOS " + pj.Facts.QOS + " for its association's default"},
			Cmd: "scontrol", Args: []string{"update", "JobId=" + pj.Target, "QOS="}, Undo: true})
	}
	return out
}

// removalOrder: the reclaim QOS first (it preempts the borrow QOS), then
// the borrow QOS, then the accounts' own, each by name.
func removalOrder(ours map[string]QOS) []QOS {
	rank := map[string]int{RoleReclaim: 0, RoleBorrow: 1, RoleOwn: 2}
	out := make([]QOS, 0, len(ours))
	for _, q := range ours {
		out = append(out, q)
	}
	sort.Slice(out, func(i, k int) bool {
		if rank[out[i].Mark.Role] != rank[out[k].Mark.Role] {
			return rank[out[i].Mark.Role] < rank[out[k].Mark.Role]
		}
		return out[i].Name < out[k].Name
	})
	return out
}

func firstN(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	return append(ids[:n:n], "...")
}
