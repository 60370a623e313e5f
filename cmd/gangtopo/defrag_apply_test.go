package main

import (
	"errors"
	"testing"
	"time"
)

// TestApplyWait: --wait ends before the hold does, counted from the hold:
// at most, and by default, defrag.hold minus its margin (30 s; a quarter
// of a hold under 2 min).
func TestApplyWait(t *testing.T) {
	tests := []struct {
		wait string
		hold time.Duration
		want time.Duration
		bad  bool
	}{
		{"", 10 * time.Minute, 9*time.Minute + 30*time.Second, false}, // 10 min - 30 s
		{"5m", 10 * time.Minute, 5 * time.Minute, false},
		{"0", 10 * time.Minute, 0, false},
		{"9m30s", 10 * time.Minute, 9*time.Minute + 30*time.Second, false},
		{"9m31s", 10 * time.Minute, 0, true},
		{"10m", 10 * time.Minute, 0, true},         // the old default: the reservation ended first
		{"", time.Minute, 45 * time.Second, false}, // 1 min - 15 s (a quarter)
		{"-1m", 10 * time.Minute, 0, true},
		{"soon", 10 * time.Minute, 0, true},
	}
	for _, tt := range tests {
		o := applyOptions{wait: tt.wait}
		got, err := o.waitFor(tt.hold)
		var ue *usageError
		if tt.bad != (err != nil) || err != nil && !errors.As(err, &ue) || got != tt.want {
			t.Errorf("--wait %q with hold %s: %v, %v; want %v (bad input: %v)", tt.wait, tt.hold, got, err, tt.want, tt.bad)
		}
	}
}
