package ctld

import (
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// TestHeldDecisionsMatchedByJob: a decision's hold on node01's GPUs 4-7
// (made at t0, pending_hold 10 s) against a later snapshot. The hold goes
// when that snapshot shows its job is not pending (cancelled, refused after
// job_submit, or started); it stays under the time rule when the snapshot
// lists the job, was taken too early to, or cannot say.
func TestHeldDecisionsMatchedByJob(t *testing.T) {
	const hold = "0a1b2c3d4e5f"
	listed := map[string]bool{hold: true, "other": true}
	others := map[string]bool{"other": true}
	tests := []struct {
		name  string
		field string          // decision_field
		hold  string          // the decision's hold=
		holds map[string]bool // the snapshot's pending holds
		after time.Duration   // the snapshot's time after the decision
		used  int             // GPUs 0.. of node01 the snapshot shows taken
		want  int             // node01's whole free GPUs
	}{
		// 8 - 4 held
		{"pending: held", jobsubmit.FieldAdminComment, hold, listed, 5 * time.Second, 0, 4},
		// cancelled or refused: the snapshot 5 s later lists no such job
		{"gone: let go", jobsubmit.FieldAdminComment, hold, others, 5 * time.Second, 0, 8},
		{"no pending job at all: let go", jobsubmit.FieldAdminComment, hold, map[string]bool{}, 5 * time.Second, 0, 8},
		// started on GPUs 0-3, not the 4-7 the engine planned: the snapshot
		// counts the job itself (8 - 4), the hold no longer counts twice
		{"started elsewhere on the node: let go", jobsubmit.FieldAdminComment, hold, others, 5 * time.Second, 4, 4},
		// 1 s is within goneGrace (2 s): the job may not be in Slurm yet
		{"too early to say: held", jobsubmit.FieldAdminComment, hold, others, time.Second, 0, 4},
		// past pending_hold the time rule lets go whatever is listed
		{"pending past pending_hold: let go", jobsubmit.FieldAdminComment, hold, listed, 11 * time.Second, 0, 8},
		// no word on pending jobs (scontrol's text, an older controller)
		{"snapshot without pending holds: time rule", jobsubmit.FieldAdminComment, hold, nil, 5 * time.Second, 0, 4},
		// the controller reads AdminComment only: with the line in Comment
		// it lists no hold of this plugin's
		{"decision_field comment: time rule", jobsubmit.FieldComment, hold, others, 5 * time.Second, 0, 4},
		{"unnamed hold: time rule", jobsubmit.FieldAdminComment, "", others, 5 * time.Second, 0, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newStoreFixture(t)
			f.store.cfg.DecisionField = tc.field
			t0 := time.Now()
			f.write(1, t0.Add(-time.Second), 0)
			f.store.Refresh()
			if _, _, err := f.store.Acquire(t0); err != nil {
				t.Fatal(err)
			}
			f.store.HoldLocked(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: 0, GPUs: []int{4, 5, 6, 7}, Milli: 1000}}}, t0, tc.hold)
			f.store.Release(false)
			f.holds = tc.holds
			f.write(2, t0.Add(tc.after), tc.used)
			f.store.Refresh()
			if free, err := f.freeOnNode01(t0.Add(tc.after)); err != nil || free != tc.want {
				t.Errorf("node01 free %d, %v; want %d", free, err, tc.want)
			}
		})
	}
}

// TestPlacedDecisionNamesItsHold: the gate names each placed job's hold in
// its decision line and holds the GPUs under that name, a new name per
// job; with decision_field: comment (which the controller does not read)
// it names none, and a job that waits holds nothing.
func TestPlacedDecisionNamesItsHold(t *testing.T) {
	for _, field := range []string{jobsubmit.FieldAdminComment, jobsubmit.FieldComment} {
		t.Run(field, func(t *testing.T) {
			g := gateFixture(t, func(c *Config) { c.DecisionField = field }, map[string]int{})
			var names []string
			for i := 0; i < 2; i++ {
				res := g.Submit(jobsubmit.Job{Name: "j", TresPerJob: "gres:gpu:16", GangTopology: "leaf"}, time.Now())
				line := res.AdminComment
				if field == jobsubmit.FieldComment {
					line = res.Comment
				}
				d, err := jobsubmit.ParseDecision(*line)
				if err != nil || d.Verdict != jobsubmit.VerdictPlaced {
					t.Fatalf("decision %q: %v", *line, err)
				}
				names = append(names, d.Hold)
			}
			held := g.Store().held
			if len(held) != 2 {
				t.Fatalf("%d holds, want 2", len(held))
			}
			for i, h := range held {
				if h.hold != names[i] {
					t.Errorf("hold %d named %q, its decision says %q", i, h.hold, names[i])
				}
			}
			named := field == jobsubmit.FieldAdminComment
			if named && (len(names[0]) != 12 || names[0] == names[1]) || !named && names[0]+names[1] != "" {
				t.Errorf("holds named %q", names)
			}
		})
	}
}
