package ctld

import (
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/defrag"
)

// DefragConfig is gangtopo.yaml's defrag: section: what `gangtopo defrag
// apply` and the controller daemon may requeue to make room for a waiting
// gang, within which limits, and the controller's policy of doing so on its
// own (docs/defrag.md). The plugin only checks it.
type DefragConfig struct {
	// Scope: only jobs Slurm may requeue (their own Requeue flag) in these
	// partitions, QOS and accounts (every list given must match; none
	// given: nothing is requeued).
	Scope defrag.Scope
	// AuditLog is the file every action is appended to, one JSON line
	// each; it is also the record the limits are checked against. The
	// same file as actions.audit_log (this is its older name).
	AuditLog string
	// Limits: requeues per hour, the lost-work budget and its window, the
	// window within which a job (or a gang a plan started) is not taken
	// again.
	Limits defrag.Limits
	// Cost prices a victim: restart overhead, requeue and priority
	// weights.
	Cost defrag.CostModel
	// Hold is how long the reservation that keeps the freed room for the
	// gang lasts at most; `defrag apply --yes` waits this long for the
	// gang by default.
	Hold time.Duration
	// Expedite makes a requeued job eligible at once (StartTime=now)
	// instead of after Slurm's requeue delay: the freed room is held for
	// the gang, so the job can only restart elsewhere.
	Expedite bool
	// Timeout bounds one Slurm command.
	Timeout time.Duration
	// Auto is the controller's policy (off by default).
	Auto DefragAuto
	// PinPreemption makes the controller pin a pending gang that Slurm's
	// own preemption would start to the cheapest compact domain whose
	// jobs Slurm may preempt (ReqNodeList).
	PinPreemption bool
	// PinTimeout is how long such a pin lasts: a gang that has not
	// started by then is unpinned (by whichever controller acts then),
	// so a pin to a node that went down, or to jobs Slurm will not
	// preempt after all, costs the gang at most this wait.
	PinTimeout time.Duration
}

// DefragAuto is the controller's policy: each cycle, a pending gang of at
// least MinGPUs GPUs that has waited at least MinWait gets a plan carried
// out when one costs at most MaxCost and the limits allow it.
type DefragAuto struct {
	Enabled     bool
	MinGPUs     int
	MinWait     time.Duration
	MaxCost     float64 // weighted GPU-hours (CostModel.Cost); 0: no cap
	MaxPerCycle int     // plans carried out per cycle
	// MaxTries bounds the gangs planned for per cycle (the oldest first);
	// Retry: a gang no plan passed for is not planned for again within it.
	MaxTries int
	Retry    time.Duration
}

// DefaultDefrag is the defrag: section's defaults. Nothing is requeued
// until a site names what may be (partitions, qos or accounts), and the
// controller's policy is off: requeuing is a site's decision.
func DefaultDefrag() DefragConfig {
	return DefragConfig{
		AuditLog: DefaultAuditLog,
		Limits: defrag.Limits{MaxPerHour: 200, BudgetFraction: 0.02, BudgetWindow: 7 * 24 * time.Hour,
			Window: 24 * time.Hour},
		Cost:     defrag.CostModel{RestartOverhead: 5 * time.Minute, RequeueWeight: 1, PriorityWeight: 0.5},
		Hold:     10 * time.Minute,
		Expedite: true,
		// Slurm preempts at its next scheduling pass (the main scheduler
		// runs every sched_interval, 60 s by default; backfill every 30
		// s), the victims get KillWait (30 s by default) to end, and the
		// gang starts at the pass after that: a few minutes. 15 minutes
		// is several times that, yet a pin gone wrong costs a gang no
		// more than a quarter of an hour.
		PinTimeout: 15 * time.Minute,
		Timeout:    10 * time.Second,
		Auto: DefragAuto{MinGPUs: 32, MinWait: 30 * time.Minute, MaxCost: 512, MaxPerCycle: 1, MaxTries: 8,
			Retry: 10 * time.Minute},
	}
}

// defrag reads the defrag: section.
func (p *configParser) defrag(v *yaml.Node, key string) {
	c := &p.c.Defrag
	p.section(v, key, map[string]func(*yaml.Node, string){
		"partitions":            func(v *yaml.Node, k string) { p.names(v, k, "partition", &c.Scope.Partitions) },
		"qos":                   func(v *yaml.Node, k string) { p.names(v, k, "QOS", &c.Scope.QOS) },
		"accounts":              func(v *yaml.Node, k string) { p.names(v, k, "account", &c.Scope.Accounts) },
		"audit_log":             func(v *yaml.Node, k string) { p.absPath(v, k, &c.AuditLog); p.defragAuditSet = true },
		"max_requeues_per_hour": func(v *yaml.Node, k string) { p.count(v, k, 1, 100000, &c.Limits.MaxPerHour) },
		"budget_percent":        func(v *yaml.Node, k string) { p.percent(v, k, &c.Limits.BudgetFraction) },
		"budget_window":         func(v *yaml.Node, k string) { p.duration(v, k, time.Hour, 90*24*time.Hour, &c.Limits.BudgetWindow) },
		"requeue_window":        func(v *yaml.Node, k string) { p.duration(v, k, 0, 90*24*time.Hour, &c.Limits.Window) },
		"restart_overhead":      func(v *yaml.Node, k string) { p.duration(v, k, 0, 24*time.Hour, &c.Cost.RestartOverhead) },
		"requeue_weight":        func(v *yaml.Node, k string) { p.number(v, k, 0, 100, &c.Cost.RequeueWeight) },
		"priority_weight":       func(v *yaml.Node, k string) { p.number(v, k, 0, 100, &c.Cost.PriorityWeight) },
		"hold":                  func(v *yaml.Node, k string) { p.duration(v, k, 30*time.Second, 24*time.Hour, &c.Hold) },
		"expedite":              func(v *yaml.Node, k string) { p.boolean(v, k, &c.Expedite) },
		"timeout":               func(v *yaml.Node, k string) { p.duration(v, k, 100*time.Millisecond, time.Minute, &c.Timeout) },
		"pin_preemption":        func(v *yaml.Node, k string) { p.boolean(v, k, &c.PinPreemption) },
		"pin_timeout":           func(v *yaml.Node, k string) { p.duration(v, k, time.Minute, 24*time.Hour, &c.PinTimeout) },
		"auto":                  p.defragAuto,
	})
}

// defragAuto reads defrag.auto: the controller's policy.
func (p *configParser) defragAuto(v *yaml.Node, key string) {
	a := &p.c.Defrag.Auto
	p.section(v, key, map[string]func(*yaml.Node, string){
		"enabled":       func(v *yaml.Node, k string) { p.boolean(v, k, &a.Enabled) },
		"min_gpus":      func(v *yaml.Node, k string) { p.count(v, k, 1, 1<<20, &a.MinGPUs) },
		"min_wait":      func(v *yaml.Node, k string) { p.duration(v, k, 0, 90*24*time.Hour, &a.MinWait) },
		"max_cost":      func(v *yaml.Node, k string) { p.number(v, k, 0, 1e9, &a.MaxCost) },
		"max_per_cycle": func(v *yaml.Node, k string) { p.count(v, k, 1, 100, &a.MaxPerCycle) },
		"max_tries":     func(v *yaml.Node, k string) { p.count(v, k, 1, 1000, &a.MaxTries) },
		"retry":         func(v *yaml.Node, k string) { p.duration(v, k, 0, 24*time.Hour, &a.Retry) },
	})
}

// section reads a mapping of keys, each once, naming unknown keys with
// what is allowed; errors name key.sub.
func (p *configParser) section(v *yaml.Node, key string, keys map[string]func(*yaml.Node, string)) {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, key, "want a mapping (%s)", strings.Join(sortedKeys(keys), ", "))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		name := key + "." + k.Value
		fn, ok := keys[k.Value]
		switch {
		case !ok:
			p.errorf(k, name, "unknown key (want one of %s)", strings.Join(sortedKeys(keys), ", "))
		case seen[k.Value]:
			p.errorf(k, name, "given twice")
		default:
			seen[k.Value] = true
			fn(val, name)
		}
	}
}

// names reads a list of Slurm names (partitions, QOS, accounts): no
// blanks or commas, which Slurm's lists cannot hold either.
func (p *configParser) names(v *yaml.Node, key, what string, dst *[]string) {
	if v.Kind != yaml.SequenceNode {
		p.errorf(v, key, "want a list of %s names, e.g. [a, b]", what)
		return
	}
	for _, e := range v.Content {
		var s string
		p.str(e, key, &s)
		if s == "" || strings.ContainsAny(s, ", \t") {
			p.errorf(e, key, "%q is not a %s name (no blanks or commas; give each as its own list item)", s, what)
			continue
		}
		*dst = append(*dst, s)
	}
}

// number reads a finite decimal number in lo..hi.
func (p *configParser) number(v *yaml.Node, key string, lo, hi float64, dst *float64) {
	f, err := strconv.ParseFloat(v.Value, 64)
	switch {
	case v.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		p.errorf(v, key, "%q is not a number (want %s..%s)", v.Value, plain(lo), plain(hi))
	case f < lo || f > hi:
		p.errorf(v, key, "%s out of range (want %s..%s)", plain(f), plain(lo), plain(hi))
	default:
		*dst = f
	}
}

// plain writes a number as typed: 1000000, not 1e+06.
func plain(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// percent reads a percentage 0..100 into a fraction.
func (p *configParser) percent(v *yaml.Node, key string, dst *float64) {
	f := *dst * 100
	p.number(v, key, 0, 100, &f)
	*dst = f / 100
}

// absPath reads an absolute file path.
func (p *configParser) absPath(v *yaml.Node, key string, dst *string) {
	var s string
	p.str(v, key, &s)
	if v.Kind == yaml.ScalarNode && !strings.HasPrefix(s, "/") {
		p.errorf(v, key, "%q is not an absolute path", s)
		return
	}
	*dst = s
}
