package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmscale"
)

func init() {
	register("ScaleSmoke128", testScaleSmoke128)
}

// testScaleSmoke128 runs the scale harness (make bench-scale) small: a lab
// of its own of 128 nodes (1 spine x 8 leaves x 16 nodes of 8 GPUs) beside
// the suite's, held jobs with the plugins and without, a fill, one small
// backlog each way under the stream, the controller with its duties on.
// It checks the verdicts, not the timings: every job submitted with the
// plugins carries the engine's decision and none without; no held or
// dependent job is re-bound; the controller polled and ran its duties, and
// sdiag was read in every window.
func testScaleSmoke128(t *testing.T) {
	cfg := slurmscale.Config{Shape: slurmscale.FatTree, Nodes: 128, Backlogs: []int{200}, Held: 40, Window: 12 * time.Second,
		FillFraction: 0.5, Root: slurmRoot(), Plugins: os.Getenv("GANGTOPO_PLUGINS"), Bin: os.Getenv("GANGTOPO_BIN"), Seed: 1,
		Logf: t.Logf}
	r, err := slurmscale.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
	if r.Nodes != 128 || r.Throughput.Calls == 0 || r.Fill.Running == 0 || len(r.Windows) != 2 {
		t.Errorf("nodes %d, plugin calls logged %d, fill jobs running %d, windows %d: want 128 nodes, some calls, some fill, 2 windows",
			r.Nodes, r.Throughput.Calls, r.Fill.Running, len(r.Windows))
	}
	for _, w := range r.Windows {
		if w.Sdiag == nil || w.Submitted == 0 {
			t.Errorf("window (plugins %v): sdiag read %v, %d submissions", w.Plugins, w.Sdiag != nil, w.Submitted)
		}
		if c := w.Controller; w.Plugins && (c.Polls.N == 0 || c.Rounds.N == 0 || c.Exited) {
			t.Errorf("window with the plugins: the controller polled %d times, ran %d duty rounds, exited %v", c.Polls.N, c.Rounds.N, c.Exited)
		}
	}
	if len(r.Windows) == 0 {
		return
	}
	t.Logf("128 nodes: started in %.1f s, whole run %.0f s; throughput ratio %.3f, plugin p99 %.0f µs; controller share %.2f%%",
		r.Start.WallS, r.ElapsedS, r.Throughput.Ratio, r.Throughput.TookP99, r.Windows[0].Share())
}
