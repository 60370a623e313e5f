package ctld

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/quota"
)

// QuotaConfig is gangtopo.yaml's quota: section: each account's
// guaranteed GPU share, and how the controller daemon keeps Slurm's QOS in
// step with it (docs/quota.md). gangtopo.yaml is the source of the shares
// and Slurm's QOS their enforcement; the plugin only checks the section.
type QuotaConfig struct {
	Enabled bool
	// Shares are the accounts' guarantees, in the file's order.
	Shares quota.Shares
	// OwnerQOS is each account's QOS (by account, lower case): its jobs
	// run there within the share, GrpTRES=gres/gpu=<share>. Default
	// OwnerQOSPrefix + account.
	OwnerQOS map[string]string
	// BorrowQOS is where jobs beyond their share run on lent GPUs,
	// preemptible (PreemptMode=REQUEUE); ReclaimQOS is where the
	// controller puts an entitled job, pinned to the nodes it frees, so
	// that Slurm preempts borrowed jobs there (Preempt=BorrowQOS).
	BorrowQOS, ReclaimQOS string
	// FragWeight charges an account weight x the free GPUs stranded on
	// nodes its jobs broke (0: shown, not counted).
	FragWeight float64
	// BorrowMaxGPUHours bounds what a borrowing job may put at risk: a
	// job whose GPUs x time limit exceeds it (or that has no time limit)
	// never borrows and waits for its account's own share
	// (quota.OverBorrowBound). 0: no bound.
	BorrowMaxGPUHours float64
	// RaiseInterval: a QOS limit is raised at most this often (lowering,
	// which protects an owner, is done at once).
	RaiseInterval time.Duration
	// MaxPerCycle bounds the scontrol updates (moves between QOS, pins)
	// of one cycle; JobInterval: a job moved or pinned is not again within
	// it.
	MaxPerCycle int
	JobInterval time.Duration
	// PinTimeout: an entitled job pinned to a reclaim plan's nodes that
	// has not started within it is released (back to its own QOS, its
	// node list cleared) and planned again: the victims may have ended,
	// others taken the nodes.
	PinTimeout time.Duration
	// Timeout bounds one sacctmgr or scontrol command.
	Timeout time.Duration
}

// OwnerQOSPrefix names an account's own QOS unless quota.shares says.
const OwnerQOSPrefix = "gt-"

// DefaultQuota is the quota: section's defaults: off until a site names
// shares; lending on for every share unless it says lend: false.
func DefaultQuota() QuotaConfig {
	return QuotaConfig{BorrowQOS: "gt-borrow", ReclaimQOS: "gt-reclaim", RaiseInterval: time.Minute,
		MaxPerCycle: 20, JobInterval: 30 * time.Second, PinTimeout: 2 * time.Minute, Timeout: 10 * time.Second, OwnerQOS: map[string]string{}}
}

// QOSOf is an account's own QOS.
func (q QuotaConfig) QOSOf(account string) string {
	if n, ok := q.OwnerQOS[strings.ToLower(account)]; ok {
		return n
	}
	return OwnerQOSPrefix + strings.ToLower(account)
}

// maxShareGPUs bounds one share: far above any cluster.
const maxShareGPUs = 1 << 24

// quota reads the quota: section.
func (p *configParser) quota(v *yaml.Node, key string) {
	c := &p.c.Quota
	p.section(v, key, map[string]func(*yaml.Node, string){
		"enabled":              func(v *yaml.Node, k string) { p.boolean(v, k, &c.Enabled) },
		"shares":               p.shares,
		"borrow_qos":           func(v *yaml.Node, k string) { p.slurmName(v, k, "QOS", &c.BorrowQOS) },
		"reclaim_qos":          func(v *yaml.Node, k string) { p.slurmName(v, k, "QOS", &c.ReclaimQOS) },
		"frag_weight":          func(v *yaml.Node, k string) { p.number(v, k, 0, 10, &c.FragWeight) },
		"borrow_max_gpu_hours": func(v *yaml.Node, k string) { p.number(v, k, 0, 1e9, &c.BorrowMaxGPUHours) },
		"raise_interval":       func(v *yaml.Node, k string) { p.duration(v, k, 0, 24*time.Hour, &c.RaiseInterval) },
		"max_per_cycle":        func(v *yaml.Node, k string) { p.count(v, k, 1, 1000, &c.MaxPerCycle) },
		"job_interval":         func(v *yaml.Node, k string) { p.duration(v, k, 0, 24*time.Hour, &c.JobInterval) },
		"pin_timeout":          func(v *yaml.Node, k string) { p.duration(v, k, 10*time.Second, 24*time.Hour, &c.PinTimeout) },
		"timeout":              func(v *yaml.Node, k string) { p.duration(v, k, 100*time.Millisecond, time.Minute, &c.Timeout) },
	})
	p.checkQuota(v, key)
}

// checkQuota checks what single keys cannot: shares when enabled, and QOS
// names that do not collide.
func (p *configParser) checkQuota(v *yaml.Node, key string) {
	c := &p.c.Quota
	if c.Enabled && len(c.Shares) == 0 {
		p.errorf(v, key+".shares", "missing: quota is enabled but names no account (give shares: [{account: NAME, gpus: N}, ...])")
	}
	seen := map[string]string{}
	qos := []struct{ what, name string }{{"borrow_qos", c.BorrowQOS}, {"reclaim_qos", c.ReclaimQOS}}
	for _, s := range c.Shares {
		qos = append(qos, struct{ what, name string }{"the QOS of account " + s.Account, c.QOSOf(s.Account)})
	}
	for _, q := range qos {
		n := strings.ToLower(q.name)
		if other, dup := seen[n]; dup {
			p.errorf(v, key, "%s and %s are the same QOS %q: each needs its own", other, q.what, q.name)
		}
		seen[n] = q.what
	}
}

// shares reads quota.shares: a list of {account, gpus, cap, lend, qos}.
func (p *configParser) shares(v *yaml.Node, key string) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, key, "want a list of shares, e.g. [{account: teama, gpus: 64}]")
		return
	}
	c := &p.c.Quota
	for i, e := range v.Content {
		item := fmt.Sprintf("%s[%d]", key, i)
		s := quota.Share{Lend: true}
		qos := ""
		p.section(e, item, map[string]func(*yaml.Node, string){
			"account": func(v *yaml.Node, k string) { p.slurmName(v, k, "account", &s.Account) },
			"gpus":    func(v *yaml.Node, k string) { p.gpus(v, k, "share", &s.GPUs) },
			"cap":     func(v *yaml.Node, k string) { p.gpus(v, k, "cap", &s.Cap) },
			"lend":    func(v *yaml.Node, k string) { p.boolean(v, k, &s.Lend) },
			"qos":     func(v *yaml.Node, k string) { p.slurmName(v, k, "QOS", &qos) },
		})
		if e.Kind != yaml.MappingNode {
			continue
		}
		if s.Account == "" {
			p.errorf(e, item+".account", "missing (the Slurm account the share is for)")
			continue
		}
		s.Account = strings.ToLower(s.Account) // Slurm keeps account names in lower case
		if s.Cap > 0 && s.Cap < s.GPUs {
			p.errorf(e, item+".cap", "%d is below the share's %d GPUs (want 0 for none, or at least the share)", s.Cap, s.GPUs)
		}
		if _, dup := c.Shares.Find(s.Account); dup {
			p.errorf(e, item+".account", "%s has a share already (one share per account)", s.Account)
			continue
		}
		if qos != "" {
			c.OwnerQOS[s.Account] = qos
		}
		c.Shares = append(c.Shares, s)
	}
}

// gpus reads a GPU count: a whole number, 0 or more.
func (p *configParser) gpus(v *yaml.Node, key, what string, dst *int) {
	n, err := strconv.Atoi(v.Value)
	switch {
	case v.Kind != yaml.ScalarNode || err != nil:
		p.errorf(v, key, "%q is not a whole number of GPUs", v.Value)
	case n < 0:
		p.errorf(v, key, "%d is negative (a %s is 0 or more GPUs)", n, what)
	case n > maxShareGPUs:
		p.errorf(v, key, "%d out of range (want 0..%d)", n, maxShareGPUs)
	default:
		*dst = n
	}
}

// slurmName reads one Slurm name (account, QOS): no blanks, commas or
// '=' (sacctmgr's syntax), not empty.
func (p *configParser) slurmName(v *yaml.Node, key, what string, dst *string) {
	var s string
	p.str(v, key, &s)
	if v.Kind != yaml.ScalarNode {
		return
	}
	if s == "" || strings.ContainsAny(s, ", \t=\"'") {
		p.errorf(v, key, "%q is not a valid %s name (no blanks, commas, quotes or '=')", s, what)
		return
	}
	*dst = s
}
