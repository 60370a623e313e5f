package actuate

import (
	"testing"
	"time"
)

// A requeued job may be made eligible RequeueMargin after its requeue, not
// sooner.
func TestMayRestart(t *testing.T) {
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		ago  time.Duration
		want bool
	}{{0, false}, {500 * time.Millisecond, false}, {1999 * time.Millisecond, false}, {2 * time.Second, true},
		{10 * time.Minute, true}, {-time.Second, false}} {
		if got := MayRestart(now.Add(-tt.ago), now); got != tt.want {
			t.Errorf("requeued %v ago: %v, want %v", tt.ago, got, tt.want)
		}
	}
}
