package defrag

import (
	"testing"
	"time"
)

func TestPreemptionFrees(t *testing.T) {
	prio := Preemption{Type: PreemptPartitionPrio, Mode: "REQUEUE", ExemptTime: 10 * time.Minute,
		Partitions: map[string]PartitionRule{"high": {PriorityTier: 10}, "low": {PriorityTier: 1}, "susp": {PriorityTier: 1, Mode: "SUSPEND"}}}
	qos := Preemption{Type: PreemptQOS, Mode: "CANCEL",
		QOS: map[string]QOSRule{"urgent": {Preempt: []string{"scavenger", "gang"}}, "scavenger": {}, "gang": {Mode: "SUSPEND,GANG"}}}
	old := t0.Add(-time.Hour)
	cases := []struct {
		name              string
		rule              Preemption
		preemptor, victim Job
		want              bool
	}{
		{"higher tier preempts lower", prio, Job{Partition: "high"}, Job{Partition: "low", Start: old}, true},
		{"same tier does not", prio, Job{Partition: "low"}, Job{Partition: "low", Start: old}, false},
		{"victim's partition suspends: GPUs stay held", prio, Job{Partition: "high"}, Job{Partition: "susp", Start: old}, false},
		{"ran less than PreemptExemptTime", prio, Job{Partition: "high"}, Job{Partition: "low", Start: t0.Add(-5 * time.Minute)}, false},
		{"unknown partition", prio, Job{Partition: "high"}, Job{Partition: "other", Start: old}, false},
		{"qos preempt list", qos, Job{QOS: "urgent"}, Job{QOS: "scavenger", Start: old}, true},
		{"qos not listed", qos, Job{QOS: "scavenger"}, Job{QOS: "urgent", Start: old}, false},
		{"victim qos suspends", qos, Job{QOS: "urgent"}, Job{QOS: "gang", Start: old}, false},
		{"preempt/none", Preemption{Type: PreemptNone, Mode: "REQUEUE"}, Job{}, Job{Start: old}, false},
		{"mode off", Preemption{Type: PreemptQOS, Mode: "OFF", QOS: qos.QOS}, Job{QOS: "urgent"}, Job{QOS: "scavenger", Start: old}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.rule.Frees(c.preemptor, c.victim, t0); got != c.want {
				t.Errorf("Frees = %v, want %v", got, c.want)
			}
		})
	}
}
