package quotaexec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Limits are the GrpTRES gres/gpu each QOS should have, by QOS name.
type Limits map[string]int

// Desired are the limits the ledger calls for:
//
//	own QOS of account a   share(a) - GPUs of a's jobs in the reclaim QOS
//	                       (running or pinned): those do not count in the
//	                       own QOS, and the account may not exceed its share
//	                       without borrowing
//	borrow QOS             what runs there now + what may still be lent
//	                       (pool - borrowed) + own: Slurm starts no more
//	                       borrowing than the pool holds. own is the part
//	                       of the waiting jobs that borrow (Plan's moves)
//	                       that sits within their accounts' shares: a job
//	                       beyond its share takes its account's remainder
//	                       first and borrows the rest
//	                       (quota.Ledger.MayBorrow), but the QOS's
//	                       GrpTRES counts the whole job. The room it
//	                       adds is the borrow QOS's, not the account's:
//	                       until the job starts, another account's
//	                       borrowing job may take it; the next cycle's
//	                       ledger then finds more borrowed than the pool
//	                       holds, lowers the limit, and the owners'
//	                       jobs take their shares back (Reclaim)
//	reclaim QOS            the GPUs of the jobs in it (running or pinned):
//	                       what the controller put there. A job anyone else
//	                       got into it (an administrator's mistaken grant)
//	                       finds no room, and preempts nothing: Slurm
//	                       checks a QOS's GrpTRES before it preempts
//	                       (node_scheduler.c select_nodes:
//	                       acct_policy_job_runnable_post_select comes
//	                       before _preempt_jobs). The controller raises it
//	                       by a job's GPUs just before it pins the job
//	                       there.
//
// reclaimHeld is, by account, the GPUs of its jobs in the reclaim QOS;
// inBorrowQOS the GPUs of running jobs in the borrow QOS; own the part of
// the waiting jobs that borrow within their accounts' shares.
func Desired(cfg ctld.QuotaConfig, l *quota.Ledger, reclaimHeld map[string]int, inBorrowQOS, own int) Limits {
	want := Limits{}
	inReclaim := 0
	for _, s := range cfg.Shares {
		want[cfg.QOSOf(s.Account)] = max(0, s.GPUs-reclaimHeld[s.Account])
	}
	for _, g := range reclaimHeld {
		inReclaim += g
	}
	want[cfg.BorrowQOS] = inBorrowQOS + max(0, l.Pool-l.Borrowed) + own
	want[cfg.ReclaimQOS] = inReclaim
	return want
}

// Change is one sacctmgr command: what it does, and its arguments after
// `sacctmgr -i`. It is made through the door (Door).
type Change struct {
	What string
	QOS  string
	// Account is the account an association change is for.
	Account string
	// From and To are the GrpTRES gres/gpu before and after (limit
	// changes; -1: none).
	From, To int
	Args     []string
}

// String is the command as a log line shows it.
func (c Change) String() string { return "sacctmgr -i " + strings.Join(c.Args, " ") }

// Door is the change as the door (actuate) makes it: action names it in
// the audit log (limit, sync, restore), duty who asked; undo marks one
// that puts back what gangtopo made (made while actions are off too).
func (c Change) Door(action, duty string, timeout time.Duration, undo bool) actuate.Change {
	reason := c.What
	if c.Account != "" {
		reason = "account " + c.Account + ": " + reason
	}
	return actuate.Change{Entry: actuate.Entry{Action: action, QOS: c.QOS, Duty: duty, Reason: reason},
		Cmd: "sacctmgr", Args: append([]string{"-i"}, c.Args...), Timeout: timeout, Undo: undo}
}

// Steps are the limit changes that bring Slurm (acc) to want, within the
// rate limit: a limit is lowered at once (a lower limit protects an owner:
// less borrowing, or an account's share held by its reclaim jobs), and
// raised only when the last raise of that QOS (lastRaise) is at least
// interval old, but for the QOS atOnce names (the reclaim QOS, whose
// limit follows what the controller placed there). A QOS Slurm does not
// have, or that gangtopo did not create, is left out (Check reports it).
func Steps(acc *Accounting, want Limits, lastRaise map[string]time.Time, now time.Time, interval time.Duration, atOnce ...string) (steps []Change, held []string) {
	names := make([]string, 0, len(want))
	for q := range want {
		names = append(names, q)
	}
	slices.Sort(names)
	for _, q := range names {
		cur, ok := acc.QOS[q]
		if !ok || !cur.Ours || cur.GrpGPUs == want[q] {
			continue
		}
		raise := cur.GrpGPUs >= 0 && want[q] > cur.GrpGPUs // from no limit, setting one lowers it
		if raise && now.Sub(lastRaise[q]) < interval && !slices.Contains(atOnce, q) {
			held = append(held, q)
			continue
		}
		steps = append(steps, LimitChange(q, cur.GrpGPUs, want[q]))
	}
	return steps, held
}

// LimitChange sets QOS q's GrpTRES gres/gpu from from to to (the other
// TRES limits stay).
func LimitChange(q string, from, to int) Change {
	return Change{What: fmt.Sprintf("GrpTRES gres/gpu %s -> %d", limitString(from), to), QOS: q, From: from, To: to,
		Args: []string{"modify", "qos", "where", "name=" + q, "set", fmt.Sprintf("GrpTRES=gres/gpu=%d", to)}}
}

func limitString(gpus int) string {
	if gpus < 0 {
		return "none"
	}
	return fmt.Sprint(gpus)
}
