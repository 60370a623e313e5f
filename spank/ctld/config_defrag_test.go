package ctld

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/defrag"
)

func TestParseDefrag(t *testing.T) {
	in := `version: v1
topology: /t.yaml
snapshot: /s.json
defrag:
  partitions: [gpu, scavenger]
  qos: [low]
  audit_log: /var/log/gangtopo/defrag.log
  max_requeues_per_hour: 50
  budget_percent: 0.5
  budget_window: 24h
  requeue_window: 2h
  restart_overhead: 1m
  requeue_weight: 2
  priority_weight: 0
  hold: 5m
  expedite: false
  timeout: 3s
  pin_preemption: true
  pin_timeout: 20m
  auto:
    enabled: true
    min_gpus: 64
    min_wait: 2h
    max_cost: 100.5
    max_per_cycle: 2
    max_tries: 3
    retry: 1m
`
	got, err := ParseConfig(strings.NewReader(in), "g.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := DefragConfig{
		Scope:    defrag.Scope{Partitions: []string{"gpu", "scavenger"}, QOS: []string{"low"}},
		AuditLog: "/var/log/gangtopo/defrag.log",
		// 0.5% is a fraction of 0.005
		Limits:        defrag.Limits{MaxPerHour: 50, BudgetFraction: 0.005, BudgetWindow: 24 * time.Hour, Window: 2 * time.Hour},
		Cost:          defrag.CostModel{RestartOverhead: time.Minute, RequeueWeight: 2},
		Hold:          5 * time.Minute,
		Timeout:       3 * time.Second,
		PinPreemption: true,
		PinTimeout:    20 * time.Minute,
		Auto:          DefragAuto{Enabled: true, MinGPUs: 64, MinWait: 2 * time.Hour, MaxCost: 100.5, MaxPerCycle: 2, MaxTries: 3, Retry: time.Minute},
	}
	if diff := cmp.Diff(want, got.Defrag); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseDefragErrors(t *testing.T) {
	const base = "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\ndefrag:\n"
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", base + "  partition: [gpu]\n", "g.yaml:5: defrag.partition: unknown key (want one of accounts, audit_log, auto, "},
		{"not a mapping", "version: v1\ntopology: /t.yaml\nsnapshot: /s.json\ndefrag: yes\n", "g.yaml:4: defrag: want a mapping (accounts, "},
		{"name with a comma", base + "  partitions: [\"gpu,cpu\"]\n", `g.yaml:5: defrag.partitions: "gpu,cpu" is not a partition name`},
		{"not a list", base + "  qos: low\n", "g.yaml:5: defrag.qos: want a list of QOS names"},
		{"percent out of range", base + "  budget_percent: 200\n", "g.yaml:5: defrag.budget_percent: 200 out of range (want 0..100)"},
		{"percent not a number", base + "  budget_percent: lots\n", `g.yaml:5: defrag.budget_percent: "lots" is not a number`},
		{"relative audit log", base + "  audit_log: defrag.log\n", `g.yaml:5: defrag.audit_log: "defrag.log" is not an absolute path`},
		{"hold too short", base + "  hold: 1s\n", "g.yaml:5: defrag.hold: 1s out of range (want 30s..24h0m0s)"},
		{"auto unknown key", base + "  auto:\n    min_gpu: 8\n", "g.yaml:6: defrag.auto.min_gpu: unknown key (want one of enabled, max_cost, max_per_cycle, max_tries, min_gpus, min_wait, retry)"},
		{"auto bad bool", base + "  auto:\n    enabled: sometimes\n", `g.yaml:6: defrag.auto.enabled: "sometimes" is not true or false`},
		{"given twice", base + "  hold: 1m\n  hold: 2m\n", "g.yaml:6: defrag.hold: given twice"},
		{"pin timeout too short", base + "  pin_timeout: 10s\n", "g.yaml:5: defrag.pin_timeout: 10s out of range (want 1m0s..24h0m0s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(strings.NewReader(tc.in), "g.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
