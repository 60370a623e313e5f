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
// missing, an account that may not use its QOS. The controller acts on
// nothing while Check fails, so the limits in force stay as they are and
// nothing is requeued; `gangtopo quota sync --yes` fixes what is only
// missing QOS or association settings.
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

// checkSlurm lists what Slurm's accounting lacks.
func checkSlurm(cfg ctld.QuotaConfig, acc *Accounting) []error {
	var errs []error
	for _, s := range cfg.Shares {
		if _, ok := acc.Accounts[s.Account]; !ok {
			errs = append(errs, fmt.Errorf("quota.shares: account %s is not in Slurm's accounting (sacctmgr show account): create it with sacctmgr add account, or correct the name; Slurm knows %s",
				s.Account, knownAccounts(acc)))
		}
	}
	for _, q := range wantedQOS(cfg) {
		if _, ok := acc.QOS[q]; !ok {
			errs = append(errs, fmt.Errorf("QOS %s does not exist in Slurm: run gangtopo quota sync --yes (docs/quota.md)", q))
		}
	}
	for _, s := range cfg.Shares {
		if q, ok := acc.QOS[cfg.QOSOf(s.Account)]; ok && len(q.Preempt) > 0 {
			errs = append(errs, fmt.Errorf("QOS %s preempts %s by itself: Slurm would take borrowed GPUs back wherever it likes, before gangtopo pins the job; run gangtopo quota sync --yes (it clears Preempt)",
				q.Name, strings.Join(q.Preempt, ",")))
		}
		a, ok := acc.Accounts[s.Account]
		if !ok {
			continue
		}
		for _, q := range []string{cfg.QOSOf(s.Account), cfg.BorrowQOS, cfg.ReclaimQOS} {
			if !slices.Contains(a.QOS, q) {
				errs = append(errs, fmt.Errorf("account %s may not use QOS %s (its association's QOS: %s): run gangtopo quota sync --yes",
					s.Account, q, strings.Join(a.QOS, ",")))
			}
		}
	}
	return errs
}

// wantedQOS are the QOS the section needs, in a stable order.
func wantedQOS(cfg ctld.QuotaConfig) []string {
	out := []string{cfg.BorrowQOS, cfg.ReclaimQOS}
	for _, s := range cfg.Shares {
		out = append(out, cfg.QOSOf(s.Account))
	}
	return out
}

func knownAccounts(acc *Accounting) string {
	var names []string
	for a := range acc.Accounts {
		names = append(names, a)
	}
	slices.Sort(names)
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
