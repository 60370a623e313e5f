package quotaexec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// SyncPlan is what makes Slurm match gangtopo.yaml's quota: section,
// changing only what gangtopo created or must take away:
//
//  1. Its QOS: each one missing is created, set as the package comment
//     says, with gangtopo's record (Mark) as its description; one gangtopo
//     created (its record) gets the settings it lacks; one gangtopo did
//     not create is refused (the error says what to do), unless adopt:
//     the administrator says an earlier gangtopo sync created it, and it
//     gets the record (what its account's default was before is not known
//     then: the record says none).
//  2. Each account with a share may use its own QOS, as its default; the
//     default it had before is in the own QOS's record.
//  3. No association may use the borrow or the reclaim QOS (Authority):
//     grants an earlier sync made, or anyone, are taken away.
//
// Limits start at the shares (the borrow and the reclaim QOS at 0: the
// controller opens them). Accounts are never created. Nothing is returned
// for what is already so.
func SyncPlan(cfg ctld.QuotaConfig, acc *Accounting, adopt bool) ([]Change, error) {
	var out []Change
	var errs []error
	for _, w := range wantedQOS(cfg) {
		c, err := syncQOS(cfg, acc, w, adopt)
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, c...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out = append(out, takeAway(cfg, acc)...)
	for _, s := range cfg.Shares {
		if c, ok := allowOwn(cfg, acc, s.Account); ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// settings are what a QOS of each role is set to (GrpTRES only when it
// has none: after that the controller keeps it).
func settings(w wanted, cfg ctld.QuotaConfig, share int) []string {
	switch w.role {
	case RoleBorrow:
		return []string{"PreemptMode=requeue", "GrpTRES=gres/gpu=0"}
	case RoleReclaim:
		return []string{"Preempt=" + cfg.BorrowQOS, "GrpTRES=gres/gpu=0"}
	}
	// no Preempt: an owner's job preempts only once the controller has
	// moved it to the reclaim QOS, pinned to its plan's nodes
	return []string{fmt.Sprintf("GrpTRES=gres/gpu=%d", share), "Preempt="}
}

// syncQOS is step 1 for one QOS.
func syncQOS(cfg ctld.QuotaConfig, acc *Accounting, w wanted, adopt bool) ([]Change, error) {
	share := 0
	if s, ok := cfg.Shares.Find(w.account); ok {
		share = s.GPUs
	}
	set := settings(w, cfg, share)
	cur, exists := acc.QOS[w.name]
	mark := Mark{Role: w.role, Account: w.account}
	if w.role == RoleOwn {
		mark.Default = defaultBefore(cfg, acc, w)
	}
	desc := "Description=" + mark.String()
	switch {
	case !exists:
		return []Change{{What: "create QOS (" + w.what() + ")", QOS: w.name,
			Args: append([]string{"add", "qos", w.name, "set", desc}, set...)}}, nil
	case !cur.Ours && !adopt:
		return nil, notOurs(w, cur)
	case !cur.Ours:
		return []Change{{What: "adopt QOS (" + w.what() + "; created by an earlier sync, says the administrator)", QOS: w.name,
			Args: append([]string{"modify", "qos", "where", "name=" + w.name, "set", desc}, missingSettings(cur, set)...)}}, nil
	case cur.Mark.Role != w.role || cur.Mark.Account != w.account:
		return nil, fmt.Errorf("QOS %s (%s) is gangtopo's %s QOS by its description (%q), not %s: name another QOS, or run gangtopo quota off --yes first",
			w.name, w.key, cur.Mark.Role, cur.Description, w.what())
	}
	if s := missingSettings(cur, set); len(s) > 0 {
		return []Change{{What: "set QOS (" + w.what() + ")", QOS: w.name,
			Args: append([]string{"modify", "qos", "where", "name=" + w.name, "set"}, s...)}}, nil
	}
	return nil, nil
}

// defaultBefore is the default QOS of the account's association before
// sync: what it is now, unless that is a QOS of gangtopo's, or one the
// section names (an earlier sync made it so; what was there before that
// is not known), or the account's former own QOS (its record says).
func defaultBefore(cfg ctld.QuotaConfig, acc *Accounting, w wanted) string {
	a, ok := acc.Accounts[w.account]
	if !ok || a.OwnDefault == "" {
		return ""
	}
	for _, o := range wantedQOS(cfg) {
		if o.name == a.OwnDefault {
			return ""
		}
	}
	if q, ok := acc.QOS[a.OwnDefault]; ok && q.Ours {
		if q.Mark.Role == RoleOwn && q.Mark.Account == w.account {
			return q.Mark.Default
		}
		return ""
	}
	return a.OwnDefault
}

// takeAway is step 3: the borrow and reclaim QOS out of every association
// that lists them. An account's own association is changed with `modify
// account` (its users' associations follow it); a user's association that
// lists them while its account's does not has them set on its own.
func takeAway(cfg ctld.QuotaConfig, acc *Accounting) []Change {
	var out []Change
	for _, name := range sortedKeys(acc.Accounts) {
		a := acc.Accounts[name]
		var own []string
		for _, l := range a.Lines {
			if l.User == "" && l.Partition == "" {
				own = granted(cfg, l.QOS)
			}
		}
		if len(own) > 0 {
			out = append(out, Change{What: "take away " + strings.Join(own, ",") + " (only the controller puts jobs there)", Account: name,
				Args: []string{"modify", "account", "where", "name=" + name, "set", "QOS-=" + strings.Join(own, ",")}})
		}
		for _, l := range a.Lines {
			g := slices.DeleteFunc(granted(cfg, l.QOS), func(q string) bool { return slices.Contains(own, q) })
			if l.User == "" || len(g) == 0 {
				continue
			}
			where := []string{"modify", "user", "where", "name=" + l.User, "account=" + name}
			if l.Partition != "" {
				where = append(where, "partition="+l.Partition)
			}
			out = append(out, Change{What: "take away " + strings.Join(g, ",") + " from user " + l.User + " (only the controller puts jobs there)", Account: name,
				Args: append(where, "set", "QOS-="+strings.Join(g, ","))})
		}
	}
	return out
}

// allowOwn is step 2 for one account: its own QOS allowed and made its
// default.
func allowOwn(cfg ctld.QuotaConfig, acc *Accounting, account string) (Change, bool) {
	a, ok := acc.Accounts[account]
	if !ok {
		return Change{}, false // Check says so; accounts are the site's to make
	}
	own := cfg.QOSOf(account)
	args := []string{"modify", "account", "where", "name=" + account, "set"}
	var what []string
	if !slices.Contains(a.QOS, own) {
		args = append(args, "QOS+="+own)
		what = append(what, "may use "+own)
	}
	if a.DefaultQOS != own {
		args = append(args, "DefaultQOS="+own)
		what = append(what, fmt.Sprintf("default QOS %s -> %s (what it was is recorded in %s's description)", orNone(splitList(a.OwnDefault)), own, own))
	}
	if len(what) == 0 {
		return Change{}, false
	}
	return Change{What: strings.Join(what, "; "), QOS: own, Account: account, Args: args}, true
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
