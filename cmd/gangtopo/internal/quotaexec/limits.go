package quotaexec

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
//	                       (pool - borrowed): Slurm starts no more
//	                       borrowing than the pool holds
//
// reclaimHeld is, by account, the GPUs of its jobs in the reclaim QOS;
// inBorrowQOS the GPUs of running jobs in the borrow QOS.
func Desired(cfg ctld.QuotaConfig, l *quota.Ledger, reclaimHeld map[string]int, inBorrowQOS int) Limits {
	want := Limits{}
	for _, s := range cfg.Shares {
		want[cfg.QOSOf(s.Account)] = max(0, s.GPUs-reclaimHeld[s.Account])
	}
	want[cfg.BorrowQOS] = inBorrowQOS + max(0, l.Pool-l.Borrowed)
	return want
}

// Change is one sacctmgr command: what it does, and its arguments after
// `sacctmgr -i`.
type Change struct {
	What string
	QOS  string
	// From and To are the GrpTRES gres/gpu before and after (limit
	// changes; -1: none).
	From, To int
	Args     []string
}

// String is the command as a log line shows it.
func (c Change) String() string { return "sacctmgr -i " + strings.Join(c.Args, " ") }

// Steps are the limit changes that bring Slurm (acc) to want, within the
// rate limit: a limit is lowered at once (a lower limit protects an owner:
// less borrowing, or an account's share held by its reclaim jobs), and
// raised only when the last raise of that QOS (lastRaise) is at least
// interval old. A QOS Slurm does not have is left out (Check reports it).
func Steps(acc *Accounting, want Limits, lastRaise map[string]time.Time, now time.Time, interval time.Duration) (steps []Change, held []string) {
	names := make([]string, 0, len(want))
	for q := range want {
		names = append(names, q)
	}
	slices.Sort(names)
	for _, q := range names {
		cur, ok := acc.QOS[q]
		if !ok || cur.GrpGPUs == want[q] {
			continue
		}
		raise := cur.GrpGPUs >= 0 && want[q] > cur.GrpGPUs // from no limit, setting one lowers it
		if raise && now.Sub(lastRaise[q]) < interval {
			held = append(held, q)
			continue
		}
		steps = append(steps, Change{What: "limit", QOS: q, From: cur.GrpGPUs, To: want[q],
			Args: []string{"modify", "qos", "where", "name=" + q, "set", fmt.Sprintf("GrpTRES=gres/gpu=%d", want[q])}})
	}
	return steps, held
}

// SyncPlan is what makes Slurm match gangtopo.yaml's quota: section: the
// QOS created where missing, each set as the package comment says, every
// account with a share allowed its own, the borrow and the reclaim QOS,
// its own as default. The limits start at the shares (the borrow QOS at
// 0: the controller opens it). Accounts are never created. Nothing is
// returned for what is already so.
func SyncPlan(cfg ctld.QuotaConfig, acc *Accounting) []Change {
	var out []Change
	qos := func(name string, settings ...string) {
		cur, ok := acc.QOS[name]
		if !ok {
			out = append(out, Change{What: "create QOS", QOS: name, Args: append([]string{"add", "qos", name, "set"}, settings...)})
			return
		}
		if s := missingSettings(cur, settings); len(s) > 0 {
			out = append(out, Change{What: "set QOS", QOS: name, Args: append([]string{"modify", "qos", "where", "name=" + name, "set"}, s...)})
		}
	}
	qos(cfg.BorrowQOS, "PreemptMode=requeue", "GrpTRES=gres/gpu=0")
	qos(cfg.ReclaimQOS, "Preempt="+cfg.BorrowQOS)
	for _, s := range cfg.Shares {
		// no Preempt: an owner's job preempts only once the controller
		// has moved it to the reclaim QOS, pinned to its plan's nodes
		qos(cfg.QOSOf(s.Account), fmt.Sprintf("GrpTRES=gres/gpu=%d", s.GPUs), "Preempt=")
	}
	for _, s := range cfg.Shares {
		a, ok := acc.Accounts[s.Account]
		if !ok {
			continue // Check says so; accounts are the site's to make
		}
		own := cfg.QOSOf(s.Account)
		var add []string
		for _, q := range []string{own, cfg.BorrowQOS, cfg.ReclaimQOS} {
			if !slices.Contains(a.QOS, q) {
				add = append(add, q)
			}
		}
		if len(add) > 0 || a.DefaultQOS != own {
			args := []string{"modify", "account", "where", "name=" + s.Account, "set"}
			if len(add) > 0 {
				args = append(args, "QOS+="+strings.Join(add, ","))
			}
			out = append(out, Change{What: "allow QOS", QOS: own, Args: append(args, "DefaultQOS="+own)})
		}
	}
	return out
}

// missingSettings are the settings a QOS does not have yet; a GrpTRES
// already set is the controller's to keep, not sync's.
func missingSettings(q QOS, settings []string) []string {
	var out []string
	for _, s := range settings {
		k, v, _ := strings.Cut(s, "=")
		switch k {
		case "PreemptMode":
			if q.PreemptMode != v {
				out = append(out, s)
			}
		case "Preempt":
			want := splitList(v)
			if !slices.Equal(q.Preempt, want) && (len(q.Preempt) > 0 || len(want) > 0) {
				out = append(out, s)
			}
		case "GrpTRES":
			if q.GrpGPUs < 0 {
				out = append(out, s)
			}
		}
	}
	return out
}
