package ctld

import (
	"time"

	"gopkg.in/yaml.v3"
)

// RebindConfig is gangtopo.yaml's rebind: section: how the controller
// daemon re-binds pending jobs whose binding went stale (docs/controller.md,
// "Re-binding"). The plugin only checks it; the controller carries it out.
type RebindConfig struct {
	// Enabled turns re-binding on (the default): without it a decision
	// made at submit stays, however stale.
	Enabled bool
	// MaxPerCycle bounds the scontrol updates of one cycle: each is an RPC
	// that takes slurmctld's job write lock.
	MaxPerCycle int
	// JobInterval: a job re-bound is not re-bound again within it, so a
	// job Slurm has not started yet (it schedules every sched_interval,
	// backfill every bf_interval) is not moved back and forth.
	JobInterval time.Duration
	// Timeout bounds one scontrol update; one that runs out ends the
	// cycle's updates (slurmctld is busy or down).
	Timeout time.Duration
	// AfterFailure re-binds a gang requeued after one of its nodes failed,
	// during its requeue wait (the controller's failure.go): its old domain
	// first when a healthy replacement makes it large enough again, else
	// the tightest domain that holds it now.
	AfterFailure bool
	// RestartAtOnce makes such a gang eligible at once (scontrol update
	// StartTime=now) instead of after Slurm's requeue delay (the job
	// credential's lifetime plus one second, 121 s by default), during
	// which the healthy nodes it leaves are free to every other job.
	// Off by default: it shortens a wait Slurm imposes, which Slurm
	// 25.11+ lets each job ask for itself (--requeue=expedite).
	RestartAtOnce bool
}

// DefaultRebind is the rebind: section's defaults. Why on: without it a
// job waits for the nodes it was bound to at submit while others are
// free, which is the one thing a binding must never cause; the updates
// touch only jobs gangtopo bound, only to the binding the plugin would
// give them now, and only when that starts them now.
func DefaultRebind() RebindConfig {
	return RebindConfig{Enabled: true, MaxPerCycle: 20, JobInterval: 2 * time.Minute, Timeout: 5 * time.Second, AfterFailure: true}
}

// maxRebindsPerCycle bounds max_per_cycle.
const maxRebindsPerCycle = 1000

// rebind reads the rebind: section.
func (p *configParser) rebind(v *yaml.Node, key string) {
	c := &p.c.Rebind
	p.section(v, key, map[string]func(*yaml.Node, string){
		"enabled":         func(v *yaml.Node, k string) { p.boolean(v, k, &c.Enabled) },
		"max_per_cycle":   func(v *yaml.Node, k string) { p.count(v, k, 1, maxRebindsPerCycle, &c.MaxPerCycle) },
		"job_interval":    func(v *yaml.Node, k string) { p.duration(v, k, 0, 24*time.Hour, &c.JobInterval) },
		"timeout":         func(v *yaml.Node, k string) { p.duration(v, k, 100*time.Millisecond, time.Minute, &c.Timeout) },
		"after_failure":   func(v *yaml.Node, k string) { p.boolean(v, k, &c.AfterFailure) },
		"restart_at_once": func(v *yaml.Node, k string) { p.boolean(v, k, &c.RestartAtOnce) },
	})
}

func (p *configParser) boolean(v *yaml.Node, key string, dst *bool) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		p.errorf(v, key, "%q is not true or false", v.Value)
		return
	}
	*dst = b
}
