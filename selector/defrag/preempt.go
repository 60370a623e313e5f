package defrag

import (
	"slices"
	"strings"
	"time"
)

// Preemption is Slurm's own preemption rule, as slurm.conf, the
// partitions and the QOS table set it: which running jobs Slurm may
// preempt for a pending one, and whether doing so frees their GPUs.
//
//	PreemptType=preempt/partition_prio  a job preempts jobs of partitions
//	                                    with a lower PriorityTier
//	PreemptType=preempt/qos             a job preempts jobs whose QOS its
//	                                    QOS's Preempt list names
//	PreemptMode (slurm.conf, or the     REQUEUE and CANCEL free the GPUs
//	victim's partition or QOS)          (a job that may not be requeued is
//	                                    cancelled under REQUEUE); SUSPEND
//	                                    and GANG keep them, OFF preempts
//	                                    nothing
//	PreemptExemptTime                   a job that ran less is not preempted
//
// Slurm picks the victims itself, among the nodes a preempting job may
// use; gangtopo's part (cmd/gangtopo's controller) is to pin the pending
// gang's ReqNodeList to the nodes of the plan For makes with
// Options.Evictable = Frees, so that what Slurm frees is one compact
// domain, at the least cost.
type Preemption struct {
	// Type is slurm.conf's PreemptType: "preempt/none",
	// "preempt/partition_prio" or "preempt/qos".
	Type string
	// Mode is slurm.conf's PreemptMode, upper case ("REQUEUE",
	// "SUSPEND,GANG", "OFF").
	Mode string
	// ExemptTime is slurm.conf's PreemptExemptTime.
	ExemptTime time.Duration
	// Partitions and QOS are the per-partition and per-QOS settings.
	Partitions map[string]PartitionRule
	QOS        map[string]QOSRule
}

// PartitionRule is one partition's part of the rule.
type PartitionRule struct {
	PriorityTier int
	Mode         string // the partition's PreemptMode; "" for the cluster's
}

// QOSRule is one QOS's part of the rule.
type QOSRule struct {
	Preempt []string // the QOS it may preempt
	Mode    string   // its PreemptMode; "" for the cluster's
}

// Slurm's preemption plugins.
const (
	PreemptNone          = "preempt/none"
	PreemptPartitionPrio = "preempt/partition_prio"
	PreemptQOS           = "preempt/qos"
)

// Active says whether Slurm preempts at all.
func (p Preemption) Active() bool {
	return (p.Type == PreemptPartitionPrio || p.Type == PreemptQOS) && !modeIs(p.Mode, "OFF")
}

// Frees says whether Slurm may preempt victim for preemptor at now, and
// doing so frees the victim's GPUs (REQUEUE or CANCEL).
func (p Preemption) Frees(preemptor, victim Job, now time.Time) bool {
	if !p.Active() || p.ExemptTime > 0 && now.Sub(victim.Start) < p.ExemptTime {
		return false
	}
	mode := p.Mode
	switch p.Type {
	case PreemptPartitionPrio:
		a, okA := p.Partitions[preemptor.Partition]
		b, okB := p.Partitions[victim.Partition]
		if !okA || !okB || a.PriorityTier <= b.PriorityTier {
			return false
		}
		if b.Mode != "" {
			mode = b.Mode
		}
	case PreemptQOS:
		q, ok := p.QOS[preemptor.QOS]
		if !ok || !slices.Contains(q.Preempt, victim.QOS) {
			return false
		}
		if v := p.QOS[victim.QOS]; v.Mode != "" {
			mode = v.Mode
		}
	}
	return modeIs(mode, "REQUEUE") || modeIs(mode, "CANCEL")
}

// modeIs says whether a PreemptMode value ("SUSPEND,GANG", "requeue")
// holds mode.
func modeIs(value, mode string) bool {
	for _, m := range strings.Split(value, ",") {
		if strings.EqualFold(strings.TrimSpace(m), mode) {
			return true
		}
	}
	return false
}
