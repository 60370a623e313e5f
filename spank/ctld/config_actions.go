package ctld

import (
	"time"

	"gopkg.in/yaml.v3"
)

// ActionsConfig is gangtopo.yaml's actions: section: the rules every
// change gangtopo makes in Slurm passes through, whichever duty asks for
// it (re-binding, defragmentation, quotas, `gangtopo unbind --clear`,
// `defrag apply`, `quota sync`): cmd/gangtopo/internal/actuate is the one
// door that enforces them. The plugin only checks the section.
type ActionsConfig struct {
	// Enabled: false makes the controller change nothing in Slurm; it
	// keeps publishing snapshots and puts back the holds and pins it made
	// (docs/admin.md, "The off switch").
	Enabled bool
	// DryRun: the controller logs each change it would make and makes
	// none.
	DryRun bool
	// AuditLog is the file every change is appended to, one JSON line
	// before it is made and one after; a change whose first line cannot be
	// written is not made. It is also the record the limits are counted
	// from, shared by the controller and the commands.
	AuditLog string
	// Leader says which controller may act: "slurm" (the one on the host
	// of the slurmctld in control, by `scontrol ping`), "always" (a site
	// with one controller host), or "never" (publish snapshots only).
	Leader string
	// Host is this host's name as slurm.conf's SlurmctldHost names it.
	// Unset, the host name, or any name SlurmctldHost gives that
	// resolves to one of this host's addresses (localhost on a one-host
	// cluster); set, that name alone.
	Host string
	// MaxPerCycle bounds the changes of one controller cycle, all duties
	// together: each is an RPC that takes slurmctld's write lock.
	MaxPerCycle int
	// Backoff is how long a change that failed is not tried again for the
	// same job (doubled at each further failure, up to MaxBackoff).
	Backoff, MaxBackoff time.Duration
}

// Leader modes.
const (
	LeaderSlurm  = "slurm"
	LeaderAlways = "always"
	LeaderNever  = "never"
)

// DefaultAuditLog is where changes are recorded unless actions.audit_log
// (or the older defrag.audit_log) says.
const DefaultAuditLog = "/var/lib/gangtopo/actions.log"

// DefaultActions is the actions: section's defaults.
func DefaultActions() ActionsConfig {
	return ActionsConfig{Enabled: true, AuditLog: DefaultAuditLog, Leader: LeaderSlurm, MaxPerCycle: 50,
		Backoff: 30 * time.Second, MaxBackoff: 30 * time.Minute}
}

// actions reads the actions: section.
func (p *configParser) actions(v *yaml.Node, key string) {
	c := &p.c.Actions
	p.section(v, key, map[string]func(*yaml.Node, string){
		"enabled":       func(v *yaml.Node, k string) { p.boolean(v, k, &c.Enabled) },
		"dry_run":       func(v *yaml.Node, k string) { p.boolean(v, k, &c.DryRun) },
		"audit_log":     func(v *yaml.Node, k string) { p.absPath(v, k, &c.AuditLog); p.auditSet = true },
		"leader":        func(v *yaml.Node, k string) { p.enum(v, k, &c.Leader, LeaderSlurm, LeaderAlways, LeaderNever) },
		"host":          func(v *yaml.Node, k string) { p.slurmName(v, k, "host", &c.Host) },
		"max_per_cycle": func(v *yaml.Node, k string) { p.count(v, k, 1, 10000, &c.MaxPerCycle) },
		"backoff":       func(v *yaml.Node, k string) { p.duration(v, k, time.Second, 24*time.Hour, &c.Backoff) },
		"max_backoff":   func(v *yaml.Node, k string) { p.duration(v, k, time.Second, 7*24*time.Hour, &c.MaxBackoff) },
	})
	if c.MaxBackoff < c.Backoff {
		p.errorf(v, key+".max_backoff", "%s is below backoff's %s (want at least backoff)", c.MaxBackoff, c.Backoff)
	}
}

// checkAuditLog reconciles actions.audit_log with defrag.audit_log, the
// older name of the same file: given alone, either names it; given both,
// they must agree.
func (p *configParser) checkAuditLog(root *yaml.Node) {
	c := p.c
	switch {
	case p.defragAuditSet && !p.auditSet:
		c.Actions.AuditLog = c.Defrag.AuditLog
	case p.auditSet && !p.defragAuditSet:
		c.Defrag.AuditLog = c.Actions.AuditLog
	case p.auditSet && p.defragAuditSet && c.Actions.AuditLog != c.Defrag.AuditLog:
		p.errorf(root, "defrag.audit_log", "%s differs from actions.audit_log %s: there is one audit log (give actions.audit_log only)",
			c.Defrag.AuditLog, c.Actions.AuditLog)
	default:
		c.Defrag.AuditLog = c.Actions.AuditLog
	}
}
