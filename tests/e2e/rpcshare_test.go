package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func init() {
	register("ControllerHoldsItsRPCShare", testControllerHoldsItsRPCShare)
}

// testControllerHoldsItsRPCShare: the controller with --max-rpc-share on
// real Slurm reads sdiag's text of this series, estimates its share of
// slurmctld's RPC time from its own listings, and on the quiet lab, where
// its listings are most of what slurmctld serves, finds it above 5% and
// spaces its cycles out (1 s interval, doubled at most a window of six
// intervals; at most half the plugin's max_snapshot_age of 30 s).
func testControllerHoldsItsRPCShare(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, clusterFile, snap)), 0o644))
	c := startController(t, "rpcshare", cfg, snap, "--max-rpc-share", "5", "--log-level", "debug")
	// the share's own message: the daemon's loop says "cycles spaced out"
	// too when a cycle is slow under load
	const spacedOut = "above --max-rpc-share: cycles spaced out"
	c.waitLogged(t, spacedOut, 45*time.Second)
	var line struct {
		Level      string  `json:"level"`
		Share      float64 `json:"share_percent"`
		Max        float64 `json:"max_percent"`
		Window     float64 `json:"window"`
		Period     float64 `json:"period"`
		NextPeriod float64 `json:"next_period"`
	}
	raw := c.line(spacedOut)
	must(t, json.Unmarshal([]byte(raw), &line))
	t.Logf("the controller's estimate: %s", raw)
	if line.Share <= 5 || line.Share > 100 || line.Max != 5 || line.Window < 5000 {
		t.Errorf("share %v%% (bound %v%%) over a window of %v ms; want above 5%% and at most 100%% over about six 1 s intervals", line.Share, line.Max, line.Window)
	}
	if line.NextPeriod <= line.Period || line.NextPeriod > 2*line.Period || line.NextPeriod > 15000 {
		t.Errorf("period %v ms -> %v ms; want longer, at most doubled, at most 15 s", line.Period, line.NextPeriod)
	}
	if l := c.line("sdiag failed"); l != "" {
		t.Errorf("sdiag failed on this series: %s", l)
	}
}
