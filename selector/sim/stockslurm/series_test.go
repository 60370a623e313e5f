package stockslurm

import (
	"os"
	"path/filepath"
	"testing"
)

// seriesRefDir is the reference procedure recorded on stock Slurm 24.11.5
// (../shared/data/slurm-24.11-reference: the same 16 nodes, slurm.conf and
// driver as 22.05's Reference 1, tree_* with topology/tree, block_* with
// topology/block).
func seriesRefDir() string {
	return filepath.Join(filepath.Dir(refDir()), "slurm-24.11-reference")
}

// The slurm model is the model of every series tested on topology/tree: on
// 24.11.5's runs it must reproduce at least 98% of the placements, as on
// 22.05.8's (TestReference). topology/block places differently from the
// first job on (the README there); the model does not claim it (no
// topology/block variant), so the block runs are not replayed.
func TestReferenceSeries(t *testing.T) {
	dir := seriesRefDir()
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("Slurm 24.11 reference data not found at %s (set %s for the 22.05 directory beside it): %v", dir, refDirEnv, err)
	}
	c, err := refCluster(refDir(), "ref1") // the same configuration as 22.05's Reference 1
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"tree_plain_run1", "tree_pernode_run1"} {
		p := run + "_placements.csv"
		r := newRefRun(p, NewTree(c))
		if err := stepsFile(p, run+"_snapshots.csv", "gpu_idx_per_node", true)(dir, r); err != nil {
			t.Fatal(err)
		}
		res := fileResult{name: p, total: r.total, matched: r.matched}
		t.Logf("Slurm 24.11.5 %s: %d / %d placements reproduced (%.1f%%)", run, r.matched, r.total, pct(r.matched, r.total))
		if !res.ok() || r.total == 0 {
			t.Errorf("Slurm 24.11.5 %s: %d of %d placements reproduced, want at least %.0f%%", run, r.matched, r.total, 100*minMatch)
		}
	}
}
