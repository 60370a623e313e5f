package e2e

import (
	"slices"
	"strings"
	"testing"
)

func init() {
	register("UnbindClearsBinding", testUnbindClearsBinding)
}

// testUnbindClearsBinding: a 32-GPU leaf gang that waits is bound to every
// leaf; `gangtopo unbind` lists it and `--clear` takes the features out, so
// it no longer waits for features (after a topology rebuild that renamed
// the domains, or once gangtopo is removed).
func testUnbindClearsBinding(t *testing.T) {
	reset(t)
	fill(t, whole("node01", "node05", "node09", "node13"))
	j := settle(t, submit(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf"))
	if j.State != "PENDING" || !allLeaves(j.Features) {
		t.Fatalf("job %s: %s, Features %q; want pending, bound to the four leaves", j.ID, j.State, j.Features)
	}
	out, err := gangtopo(t, "unbind")
	if err != nil || !strings.Contains(out, "job "+j.ID+": PENDING") || !strings.Contains(out, "Features:    "+j.Features+" -> (none)") {
		t.Fatalf("gangtopo unbind: %v\n%s", err, out)
	}
	if out, err := gangtopo(t, "unbind", "--clear", "--config", configFile, j.ID); err != nil || !strings.Contains(out, "cleared") {
		t.Fatalf("gangtopo unbind --clear: %v\n%s", err, out)
	}
	after, err := lab.ShowJob(ctxT(t), j.ID)
	must(t, err)
	if after.Features != "" {
		t.Errorf("after unbind --clear, Features %q", after.Features)
	}
}

// allLeaves says a features expression is a matching OR over lab16's four
// leaves, in any order (the closest to fitting first: the order follows
// the snapshot and the plugin's held decisions).
func allLeaves(features string) bool {
	inner, ok := strings.CutPrefix(features, "[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	parts := strings.Split(inner, "|")
	if !ok || !ok2 || len(parts) != 4 {
		return false
	}
	for _, leaf := range []string{"gt_leaf1", "gt_leaf2", "gt_leaf3", "gt_leaf4"} {
		if !slices.Contains(parts, leaf) {
			return false
		}
	}
	return true
}
