package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

func init() {
	register("DefragControllerPolicy", testDefragControllerPolicy)
}

// testDefragControllerPolicy: the controller's policy (defrag.auto on,
// gangs of 32+ GPUs at once) carries a plan out in one cycle on the
// fragmented cluster: it holds leaf2 for the waiting gang and requeues the
// one job there, without waiting; the gang starts; the next cycle ends the
// hold (the running gang is taken out of the reservation first) and the
// gang keeps running.
func testDefragControllerPolicy(t *testing.T) {
	reset(t)
	cfg := defragConfig(t)
	data, err := os.ReadFile(cfg)
	must(t, err)
	must(t, os.WriteFile(cfg, append(data, []byte("  auto:\n    enabled: true\n    min_gpus: 32\n    min_wait: 0s\n")...), 0o644))
	jobs := fragmented(t)
	gang := pendingGang(t)
	cycle := func() string {
		out, err := gangtopo(t, "daemon", "--role", "controller", "--once", "--topology", clusterFile, "-o", snapshotFile, "--config", cfg)
		if err != nil {
			t.Fatalf("controller cycle: %v\n%s", err, out)
		}
		return out
	}
	out := cycle()
	if !strings.Contains(out, "defrag: carrying a plan out for a waiting gang") || !strings.Contains(out, "requeue job "+jobs["b"]+": ok") ||
		!strings.Contains(out, `"command":"scontrol requeue `+jobs["b"]+`"`) {
		t.Fatalf("first cycle did not carry the plan out (requeue job b, %s):\n%s", jobs["b"], out)
	}
	g := waitRunning(t, gang, 60*time.Second)
	if leaves := leavesOf(t, g); len(leaves) != 1 || leaves[0] != "leaf2" {
		t.Errorf("gang runs on %v, want leaf2", g.Nodes)
	}
	if holds := gangtopoHolds(t); len(holds) != 1 {
		t.Errorf("holds while the gang starts: %v, want its one", holds)
	}
	out = cycle()
	if !strings.Contains(out, "release hold gangtopo_defrag_"+gang+" of job "+gang+": ok (the gang runs)") {
		t.Errorf("second cycle did not release the hold:\n%s", out)
	}
	time.Sleep(2 * time.Second)
	if holds := gangtopoHolds(t); len(holds) != 0 {
		t.Errorf("holds after the second cycle: %v", holds)
	}
	if g, err := lab.ShowJob(ctxT(t), gang); err != nil || g.State != "RUNNING" {
		t.Errorf("gang after the hold ended: %v %v", err, g.State)
	}
	for _, name := range []string{"a1", "a2", "c", "d"} {
		if r := restarts(t, jobs[name]); r != "0" {
			t.Errorf("job %s has %s restarts, want 0", name, r)
		}
	}
}
