package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func init() {
	register("RequiredWaitsPreferredGoesWider", testRequiredWaitsPreferredGoesWider)
}

// testRequiredWaitsPreferredGoesWider: one node busy in every leaf, so no
// leaf has 32 GPUs free.
//
// A required leaf gang pends; Slurm's reason says it waits for resources,
// the decision in its AdminComment says why in gangtopo's words (and
// `gangtopo why` prints both), and it starts inside one leaf as soon as
// one frees up. A preferred leaf gang in the same situation starts at
// once, wider. (They are not submitted together: with unlimited time limits
// Slurm does not start a later job past a pending one in the partition.)
func testRequiredWaitsPreferredGoesWider(t *testing.T) {
	reset(t)
	fill(t, whole("node01", "node05", "node09", "node13"))
	id := submit(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	req := settle(t, id)
	// Slurm 26.05 names the same wait Insufficient_resources_in_topology_unit
	if req.State != "PENDING" || req.Reason != "Resources" && req.Reason != "Insufficient_resources_in_topology_unit" {
		t.Fatalf("required gang: %s (%s), want PENDING (Resources)", req.State, req.Reason)
	}
	// bound to the four leaves, the closest to fitting first (the order
	// follows the snapshot and the plugin's held decisions)
	wantText := "gangtopo v1 waiting request=leaf:required gpus=32 bound="
	if !strings.HasPrefix(req.AdminComment, wantText) || !strings.Contains(req.AdminComment, "no leaf has room for 32 GPUs now") || !allLeaves(req.Features) {
		t.Errorf("decision %q, Features %q; want %q... no leaf has room for 32 GPUs now, bound to the four leaves", req.AdminComment, req.Features, wantText)
	}
	why := gangtopoWhy(t, id)
	bound := strings.ReplaceAll(strings.Trim(req.Features, "[]"), "|", ", ")
	bound = strings.ReplaceAll(bound, "gt_", "")
	// Slurm 26.05 switches between the two reasons from one scheduling
	// pass to the next: why reads its own, later than settle did
	if !waitingForResources.MatchString(why) {
		t.Errorf("gangtopo why %s:\n%s\nwant it to match %s", id, why, waitingForResources)
	}
	for _, want := range []string{"gangtopo: no domain of the requested tier had room",
		"bound to:  " + bound + " (required, " + req.Features + ")", "no leaf has room for 32 GPUs now"} {
		if !strings.Contains(why, want) {
			t.Errorf("gangtopo why %s:\n%s\nwant it to contain %q", id, why, want)
		}
	}

	// free node13: leaf4 is whole again and the required gang starts there
	cancelOn(t, "node13")
	started := settle(t, id)
	if started.State != "RUNNING" || strings.Join(leavesOf(t, started), ",") != "leaf4" {
		t.Errorf("after node13 freed: required gang %s on %v, want RUNNING in leaf4", started.State, started.Nodes)
	}

	// the same full leaves again, now a preferred gang: it starts at once,
	// over two leaves
	if _, err := lab.Run(ctxT(t), 0, "scancel", id); err != nil {
		t.Fatal(err)
	}
	waitGone(t, id, 30*time.Second)
	fill(t, whole("node13"))
	pref := settle(t, submit(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf:preferred"))
	if pref.State != "RUNNING" || len(leavesOf(t, pref)) < 2 || !strings.HasPrefix(pref.AdminComment, "gangtopo v1 wider request=leaf:preferred") {
		t.Errorf("preferred gang: %s on %v (%s), want RUNNING over 2+ leaves, decided wider", pref.State, pref.Nodes, pref.AdminComment)
	}
}

// waitingForResources is how gangtopo why says a gang waits for room.
var waitingForResources = regexp.MustCompile(`PENDING \((Resources|Insufficient_resources_in_topology_unit): waiting for resources`)

// cancelOn cancels the running jobs on one node.
func cancelOn(t *testing.T, node string) {
	t.Helper()
	out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-t", "R", "-w", node, "-o", "%i")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range strings.Fields(out) {
		if _, err := lab.Run(ctxT(t), 0, "scancel", id); err != nil {
			t.Fatal(err)
		}
	}
}

// gangtopoWhy runs `gangtopo why JOBID` against the lab.
func gangtopoWhy(t *testing.T, id string) string {
	t.Helper()
	out, err := gangtopo(t, "why", id, "--topology", clusterFile)
	if err != nil {
		t.Fatalf("gangtopo why %s: %v\n%s", id, err, out)
	}
	return out
}
