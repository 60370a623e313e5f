package quotaexec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// Check compares gangtopo.yaml's quota: section with the cluster and with
// Slurm's accounting, and reports every problem at once: shares that do
// not fit the cluster (or a negative one), an account Slurm does not know
// (gangtopo never creates accounts: a typo must not become one), a QOS
// missing or not gangtopo's (Ownership), an account that may not use its
// own QOS, and any association that may use the borrow or the reclaim QOS
// (Authority). The controller acts on nothing while Check fails, so the
// limits in force stay as they are and nothing is requeued; `gangtopo
// quota sync --yes` fixes what is only missing QOS or association
// settings.
func Check(cfg ctld.QuotaConfig, clusterGPUs int, acc *Accounting) error {
	errs := []error{}
	if err := cfg.Shares.Validate(clusterGPUs); err != nil {
		errs = append(errs, fmt.Errorf("quota.shares: %w", err))
	}
	if acc != nil {
		errs = append(errs, checkSlurm(cfg, acc)...)
	}
	return errors.Join(errs...)
}

// checkSlurm lists what Slurm's accounting lacks, or has that it must
// not.
func checkSlurm(cfg ctld.QuotaConfig, acc *Accounting) []error {
	var errs []error
	for _, s := range cfg.Shares {
		if _, ok := acc.Accounts[s.Account]; !ok {
			errs = append(errs, fmt.Errorf("quota.shares: account %s is not in Slurm's accounting (sacctmgr show account): create it with sacctmgr add account, or correct the name; Slurm knows %s",
				s.Account, knownAccounts(acc)))
		}
	}
	for _, w := range wantedQOS(cfg) {
		q, ok := acc.QOS[w.name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("QOS %s (%s) does not exist in Slurm: run gangtopo quota sync --yes (docs/quota.md)", w.name, w.key))
		case !q.Ours:
			errs = append(errs, notOurs(w, q))
		case q.Mark.Role != w.role || q.Mark.Account != w.account:
			errs = append(errs, fmt.Errorf("QOS %s (%s) is gangtopo's %s QOS by its description (%q), not %s: each QOS has one role; name another QOS in gangtopo.yaml, or run gangtopo quota off --yes and sync again",
				w.name, w.key, q.Mark.Role, q.Description, w.what()))
		case w.role == RoleOwn && len(q.Preempt) > 0:
			errs = append(errs, fmt.Errorf("QOS %s preempts %s by itself: Slurm would take borrowed GPUs back wherever it likes, before gangtopo pins the job; run gangtopo quota sync --yes (it clears Preempt)",
				q.Name, strings.Join(q.Preempt, ",")))
		}
	}
	for _, s := range cfg.Shares {
		a, ok := acc.Accounts[s.Account]
		if own := cfg.QOSOf(s.Account); ok && !slices.Contains(a.QOS, own) {
			errs = append(errs, fmt.Errorf("account %s may not use its QOS %s (its associations' common QOS: %s): run gangtopo quota sync --yes",
				s.Account, own, orNone(a.QOS)))
		}
	}
	return append(errs, Authority(cfg, acc)...)
}

// Authority lists the associations that may use the borrow or the reclaim
// QOS. Only the controller puts jobs there, as Slurm's operator: Slurm
// lets an operator's `scontrol update JobId= QOS=` use a QOS the job's
// association does not list (job_mgr.c _update_job, the operator flag to
// _determine_and_validate_qos), and the job keeps it while it waits and
// runs (limit_set.qos). A user whose association lists the reclaim QOS
// could submit there, or move a pending job there, and have Slurm requeue
// borrowed jobs wherever it likes; one that lists the borrow QOS could
// borrow past the controller's order and caps.
func Authority(cfg ctld.QuotaConfig, acc *Accounting) []error {
	var errs []error
	for _, name := range sortedKeys(acc.Accounts) {
		for _, l := range acc.Accounts[name].Lines {
			if grant := granted(cfg, l.QOS); len(grant) > 0 {
				errs = append(errs, fmt.Errorf("the association %s may use QOS %s: any of its users could put jobs there (the reclaim QOS requeues borrowed jobs); only the controller may: run gangtopo quota sync --yes (it takes the grant away)",
					l, strings.Join(grant, ",")))
			}
		}
	}
	return errs
}

// granted are the borrow and reclaim QOS among qos.
func granted(cfg ctld.QuotaConfig, qos []string) []string {
	var out []string
	for _, q := range []string{cfg.BorrowQOS, cfg.ReclaimQOS} {
		if slices.Contains(qos, q) {
			out = append(out, q)
		}
	}
	return out
}

// String names an association as sacctmgr's commands do.
func (l AssocLine) String() string {
	s := "account=" + l.Account
	if l.User != "" {
		s += " user=" + l.User
	}
	if l.Partition != "" {
		s += " partition=" + l.Partition
	}
	return s
}

// notOurs is the refusal of a QOS gangtopo did not create.
func notOurs(w wanted, q QOS) error {
	return fmt.Errorf("QOS %s (%s) exists, and gangtopo did not create it (its description %q has no %q record): gangtopo sets the limits, Preempt and users of the QOS it uses, so it uses only its own. "+
		"Leave the name out of gangtopo.yaml (gangtopo quota sync then creates %s), or name a QOS that does not exist yet; if an earlier gangtopo quota sync created %s, run gangtopo quota sync --adopt --yes",
		w.name, w.key, q.Description, markMagic, w.fallback, w.name)
}

// wanted is a QOS the quota: section names: its role, and the key that
// names it.
type wanted struct {
	name, role, account, key, fallback string
}

func (w wanted) what() string {
	if w.role == RoleOwn {
		return "account " + w.account + "'s own"
	}
	return "the " + w.role + " QOS"
}

// wantedQOS are the QOS the section needs, in a stable order.
func wantedQOS(cfg ctld.QuotaConfig) []wanted {
	d := ctld.DefaultQuota()
	out := []wanted{{name: cfg.BorrowQOS, role: RoleBorrow, key: "quota.borrow_qos", fallback: d.BorrowQOS},
		{name: cfg.ReclaimQOS, role: RoleReclaim, key: "quota.reclaim_qos", fallback: d.ReclaimQOS}}
	for _, s := range cfg.Shares {
		out = append(out, wanted{name: cfg.QOSOf(s.Account), role: RoleOwn, account: s.Account,
			key: "qos of account " + s.Account + " in quota.shares", fallback: ctld.OwnerQOSPrefix + s.Account})
	}
	return out
}

// CheckEnforce reads slurm.conf's AccountingStorageEnforce from `scontrol
// show config` ("AccountingStorageEnforce = associations,limits,qos"):
// without limits Slurm enforces no GrpTRES, so no share holds and nothing
// caps the reclaim QOS; without qos any user may name any QOS (the
// reclaim QOS too: Slurm checks a job's QOS against its association only
// under qos).
func CheckEnforce(showConfig string) error {
	for _, line := range strings.Split(showConfig, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "AccountingStorageEnforce" {
			continue
		}
		have := strings.Split(strings.TrimSpace(v), ",")
		var missing []string
		for _, need := range []string{"limits", "qos"} {
			if !slices.Contains(have, need) {
				missing = append(missing, need)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		return fmt.Errorf("slurm.conf's AccountingStorageEnforce is %s, without %s: without limits no QOS GrpTRES holds (no share, no cap on the reclaim QOS); without qos any user may put a job in any QOS, the reclaim QOS too, and requeue borrowed jobs. Set AccountingStorageEnforce=associations,limits,qos and run scontrol reconfigure",
			strings.TrimSpace(v), strings.Join(missing, " and "))
	}
	return errors.New("scontrol show config prints no AccountingStorageEnforce: Slurm's accounting is not in use (quotas need slurmdbd and AccountingStorageEnforce=associations,limits,qos)")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ",")
}

func knownAccounts(acc *Accounting) string {
	names := sortedKeys(acc.Accounts)
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
