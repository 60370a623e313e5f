package defragrun

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/defrag"
)

func TestReadPreemptionOutputs(t *testing.T) {
	config := "Configuration data as of 2026-12-03T18:32:09\nAccountingStorageBackupHost = (null)\nPreemptMode             = REQUEUE\nPreemptType             = preempt/partition_prio\nPreemptExemptTime       = 1-00:10:00\nPriorityType            = priority/basic\n"
	parts := "PartitionName=gpu AllowGroups=ALL Default=YES PriorityJobFactor=1 PriorityTier=1 RootOnly=NO PreemptMode=REQUEUE State=UP\n" +
		"PartitionName=urgent AllowGroups=ALL PriorityTier=10 PreemptMode=OFF State=UP\n"
	qos := "normal||cluster\nurgent|normal,scavenger|requeue\nscavenger||cancel\n"
	var p defrag.Preemption
	if err := ParseConfigPreempt(config, &p); err != nil {
		t.Fatal(err)
	}
	var err error
	if p.Partitions, err = ParsePartitions(parts); err != nil {
		t.Fatal(err)
	}
	if p.QOS, err = ParseQOS(qos); err != nil {
		t.Fatal(err)
	}
	want := defrag.Preemption{Type: defrag.PreemptPartitionPrio, Mode: "REQUEUE", ExemptTime: 24*time.Hour + 10*time.Minute,
		Partitions: map[string]defrag.PartitionRule{"gpu": {PriorityTier: 1, Mode: "REQUEUE"}, "urgent": {PriorityTier: 10, Mode: "OFF"}},
		QOS: map[string]defrag.QOSRule{"normal": {}, "urgent": {Preempt: []string{"normal", "scavenger"}, Mode: "REQUEUE"},
			"scavenger": {Mode: "CANCEL"}}}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []func() error{
		func() error { return ParseConfigPreempt("PreemptMode = OFF\n", &defrag.Preemption{}) },
		func() error { _, err := ParsePartitions("PartitionName=gpu PriorityTier=high\n"); return err },
		func() error { _, err := ParseQOS("normal|cluster\n"); return err },
		func() error {
			return ParseConfigPreempt("PreemptType = preempt/qos\nPreemptExemptTime = soon\n", &defrag.Preemption{})
		},
	} {
		if bad() == nil {
			t.Error("a malformed output was read without error")
		}
	}
}
