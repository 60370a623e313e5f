package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// down sets the named nodes of s down.
func down(t *testing.T, s *occupancy.Snapshot, names ...string) *occupancy.Snapshot {
	t.Helper()
	for _, name := range names {
		id, ok := s.Cluster.NodeByName(name)
		if !ok {
			t.Fatalf("no node %s", name)
		}
		s.SetState(id, occupancy.StateDown)
	}
	return s
}

// Lab16: four leaves of four 8-GPU nodes (leaf1 node01-04, leaf2
// node05-08, leaf3 node09-12, leaf4 node13-16). A leaf gang ran in leaf2
// and node06 failed under it; Slurm requeued it with the binding made at
// submit on an empty cluster, leaf1 first.
func TestRestart(t *testing.T) {
	tests := []struct {
		name     string
		gpus     string
		ran      []string
		busy     map[string]int
		stale    bool
		inOld    bool
		verdict  Verdict
		features string // the update's, when stale
		why      string
	}{
		// 24 GPUs on node05-07; node05, node07 and node08 are healthy
		// and free: node08 replaces node06, leaf2 is listed first
		{name: "healthy replacement in the old leaf", gpus: "gres:gpu:24", ran: []string{"node05", "node06", "node07"},
			busy: full("node01"), stale: true, inOld: true, verdict: VerdictPlaced,
			features: "[gt_leaf2|gt_leaf3|gt_leaf4|gt_leaf1]", why: "requeued after a node failure: a healthy replacement inside leaf2, listed first"},
		// node08 busy: leaf2 has 16 GPUs of healthy free nodes, not 24;
		// leaf3 and leaf4 are free (32 each), leaf1 has 24
		{name: "old leaf busy: the tightest free leaf", gpus: "gres:gpu:24", ran: []string{"node05", "node06", "node07"},
			busy: full("node01", "node08"), stale: true, verdict: VerdictPlaced,
			features: "[gt_leaf1|gt_leaf3|gt_leaf4|gt_leaf2]", why: "requeued after a node failure: leaf2 cannot hold it now; placed in leaf leaf1"},
		// 32 GPUs, a whole leaf: leaf2 holds 24 healthy GPUs until node06
		// is repaired, so it goes last among the leaves
		{name: "degraded old leaf listed last", gpus: "gres:gpu:32", ran: []string{"node05", "node06", "node07", "node08"},
			busy: map[string]int{}, stale: true, verdict: VerdictPlaced,
			features: "[gt_leaf1|gt_leaf3|gt_leaf4|gt_leaf2]", why: "requeued after a node failure: leaf2 cannot hold it now; placed in leaf leaf1"},
		// every other leaf has a busy node: the gang waits, for the
		// healthy leaves first
		{name: "no room: waits for a healthy leaf first", gpus: "gres:gpu:32", ran: []string{"node05", "node06", "node07", "node08"},
			busy: full("node01", "node09", "node13"), stale: true, verdict: VerdictWaiting,
			features: "[gt_leaf1|gt_leaf3|gt_leaf4|gt_leaf2]", why: "requeued after a node failure: leaf2 cannot hold it now; no leaf has room"},
		// it ran in leaf1, which was listed first: the binding stays
		{name: "old leaf first already", gpus: "gres:gpu:16", ran: []string{"node01", "node02"},
			busy: map[string]int{}, inOld: true, why: "a new decision binds it the same way"},
		{name: "nodes not in the cluster file", gpus: "gres:gpu:16", ran: []string{"gpu-x1", "node02"},
			busy: map[string]int{}, why: "a new decision binds it the same way"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, now, dec := submitted(t, nil, map[string]int{}, Job{TresPerJob: tt.gpus, GangTopology: "leaf", Name: "g"})
			if !strings.HasPrefix(now.Features, "[gt_leaf1|") {
				t.Fatalf("bound at submit to %q", now.Features)
			}
			failed := "node06"
			if tt.ran[0] == "node01" || tt.ran[0] == "gpu-x1" {
				failed = "node02"
			}
			s := down(t, snapshotOf(t, d, tt.busy), failed)
			rs := d.Restart(now, dec, tt.ran, s, place.New(d.Cluster(), d.Policy().EngineOptions(nil)), 9)
			if rs.Stale != tt.stale || rs.InOld != tt.inOld || !strings.HasPrefix(rs.Why, tt.why) {
				t.Fatalf("stale %v, in old %v (%s); want %v, %v (%s)", rs.Stale, rs.InOld, rs.Why, tt.stale, tt.inOld, tt.why)
			}
			if !tt.stale {
				return
			}
			if rs.Result.Decision.Verdict != tt.verdict || rs.Update.Features == nil {
				t.Fatalf("decision %q, update %s", rs.Result.Decision, rs.Update)
			}
			if diff := cmp.Diff(tt.features, *rs.Update.Features); diff != "" {
				t.Errorf("features (-want +got):\n%s", diff)
			}
			for _, a := range rs.Tasks {
				for _, na := range a.Nodes {
					if d.Cluster().Nodes[na.Node].Name == failed {
						t.Errorf("placed on the failed node %s", failed)
					}
				}
			}
		})
	}
}

// A required gang bound to one leaf whose failed node leaves it too
// small is re-bound to the leaves that can hold it even when it has to
// wait for them; one whose leaves are all degraded stays.
func TestRebindAwayFromDegraded(t *testing.T) {
	// at submit leaf1-3 have a busy node each: the 32-GPU gang is bound
	// to leaf4 first
	atSubmit := full("node01", "node05", "node09")
	d, now, dec := submitted(t, nil, atSubmit, Job{TresPerJob: "gres:gpu:32", GangTopology: "leaf", Name: "g"})
	if !strings.HasPrefix(now.Features, "[gt_leaf4|") {
		t.Fatalf("bound at submit to %q", now.Features)
	}
	now.Features = "gt_leaf4" // a binding to leaf4 alone, as an older decision may have made
	dec.Bound = []string{"leaf4"}
	s := down(t, snapshotOf(t, d, atSubmit), "node14")
	rb := rebind(t, d, now, dec, s)
	if !rb.Stale || !strings.HasPrefix(rb.Why, "failed nodes leave no domain of its binding large enough") {
		t.Fatalf("stale %v (%s); want re-bound away from leaf4", rb.Stale, rb.Why)
	}
	if got := *rb.Update.Features; !strings.HasSuffix(got, "|gt_leaf4]") {
		t.Errorf("features %q; want leaf4 last", got)
	}
	// every leaf degraded: nothing better to bind it to
	s = down(t, snapshotOf(t, d, atSubmit), "node02", "node06", "node10", "node14")
	if rb := rebind(t, d, now, dec, s); rb.Stale {
		t.Errorf("all leaves degraded: re-bound (%s) to %s", rb.Why, rb.Update)
	}
}
