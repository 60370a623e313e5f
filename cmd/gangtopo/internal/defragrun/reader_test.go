package defragrun

import (
	"testing"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// TestJobState: a requeued job is pending again only when Slurm has
// finished its requeue, whether the series names the state in one string
// (22.05) or as a base state and flags (23.02 on).
func TestJobState(t *testing.T) {
	for _, c := range []struct {
		state string
		flags []string
		want  string
	}{
		{"PENDING", nil, "PENDING"},
		{"PENDING", []string{"COMPLETING", "REQUEUED"}, "COMPLETING"}, // 26.05 while the old steps end
		{"PENDING", []string{"REQUEUED"}, "REQUEUED"},
		{"PENDING", []string{"REQUEUE_HOLD"}, "REQUEUE_HOLD"},
		{"COMPLETING", nil, "COMPLETING"}, // 22.05's single string
		{"RUNNING", []string{"COMPLETING"}, "RUNNING"},
		{"PENDING", []string{"CONFIGURING"}, "PENDING"},
	} {
		if got := jobState(slurmstate.Record{State: c.state, Flags: c.flags}); got != c.want {
			t.Errorf("jobState(%s %v) = %s, want %s", c.state, c.flags, got, c.want)
		}
	}
}
