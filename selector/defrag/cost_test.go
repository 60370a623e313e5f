package defrag

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestCostModel(t *testing.T) {
	m := CostModel{RestartOverhead: 6 * time.Minute, RequeueWeight: 1, PriorityWeight: 1}
	cases := []struct {
		name       string
		job        Job
		gpus       int
		ref        uint32
		lost, cost float64
	}{
		// 4 GPUs x (2 h run + 0.1 h overhead) = 8.4; no requeue, no priority
		{"ran two hours", Job{Start: t0.Add(-2 * time.Hour)}, 4, 0, 8.4, 8.4},
		// checkpoint 30 min ago: 4 x (0.5 + 0.1) = 2.4
		{"checkpoint", Job{Start: t0.Add(-2 * time.Hour), Checkpoint: t0.Add(-30 * time.Minute)}, 4, 0, 2.4, 2.4},
		// a checkpoint before the start means nothing: 1 x (1 + 0.1)
		{"old checkpoint", Job{Start: t0.Add(-time.Hour), Checkpoint: t0.Add(-3 * time.Hour)}, 1, 0, 1.1, 1.1},
		// saves on SIGTERM: only the overhead, 8 x 0.1 = 0.8
		{"sigterm", Job{Start: t0.Add(-5 * time.Hour), OnSIGTERM: true}, 8, 0, 0.8, 0.8},
		// requeued twice: 1.1 x (1 + 2) = 3.3
		{"requeued twice", Job{Start: t0.Add(-time.Hour), Restarts: 2}, 1, 0, 1.1, 3.3},
		// priority equal to the gang's: 1.1 x (1 + 1) = 2.2
		{"same priority", Job{Start: t0.Add(-time.Hour), Priority: 500}, 1, 500, 1.1, 2.2},
		// 100x the gang's priority is capped at 10x: 1.1 x 11 = 12.1
		{"priority capped", Job{Start: t0.Add(-time.Hour), Priority: 50000}, 1, 500, 1.1, 12.1},
		// a start in the future (clock skew) counts no run time
		{"future start", Job{Start: t0.Add(time.Hour)}, 2, 0, 0.2, 0.2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := []float64{round(m.Lost(c.job, c.gpus, t0)), round(m.Cost(c.job, c.gpus, t0, c.ref))}
			if diff := cmp.Diff([]float64{c.lost, c.cost}, got); diff != "" {
				t.Errorf("lost, cost (-want +got):\n%s", diff)
			}
		})
	}
}

func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func TestScope(t *testing.T) {
	gpu := Job{Requeue: true, Partition: "gpu", QOS: "normal", Account: "ml"}
	cases := []struct {
		name  string
		scope Scope
		job   Job
		want  bool
	}{
		{"nothing named: nothing in scope", Scope{}, gpu, false},
		{"partition named", Scope{Partitions: []string{"gpu"}}, gpu, true},
		{"other partition", Scope{Partitions: []string{"preempt"}}, gpu, false},
		{"--no-requeue is never in scope", Scope{Partitions: []string{"gpu"}}, Job{Partition: "gpu"}, false},
		{"every given list must match", Scope{Partitions: []string{"gpu"}, QOS: []string{"scavenger"}}, gpu, false},
		{"qos and account", Scope{QOS: []string{"normal"}, Accounts: []string{"ml", "cv"}}, gpu, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.scope.Allows(c.job); got != c.want {
				t.Errorf("Allows = %v, want %v (why: %q)", got, c.want, c.scope.Why(c.job))
			}
			if got := c.scope.Why(c.job) == ""; got != c.want {
				t.Errorf("Why = %q, want it empty only when allowed", c.scope.Why(c.job))
			}
		})
	}
}
