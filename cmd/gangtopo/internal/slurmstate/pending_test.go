package slurmstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// The pending jobs of lab16_pending_squeue.json (testdata/README.md): a
// shaped leaf gang and a node-bound 1-GPU job (both held), an array of
// which task 4 was split off, a heterogeneous job and a 32-GPU gang.
func TestParsePendingJobs(t *testing.T) {
	var pend []PendingJob
	if _, _, err := parseSqueueJSON(readTestdata(t, "lab16_pending_squeue.json"), "squeue --json", nil, pendingLists{decided: &pend}); err != nil {
		t.Fatal(err)
	}
	byID := map[string]PendingJob{}
	var ids []string
	for _, p := range pend {
		byID[p.ID] = p
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]string{"96", "97", "118", "115+0", "115+1", "117", "114"}, ids); diff != "" {
		t.Fatalf("pending jobs with a decision (-want +got):\n%s", diff)
	}
	tests := []struct {
		id   string
		want PendingJob
	}{
		{"96", PendingJob{ID: "96", Target: "96", UserIDKnown: true, Reason: "JobHeldUser", Submit: time.Unix(1796290976, 0).UTC(),
			Job: jobsubmit.Job{Name: "shaped", Partition: "gpu", TresPerNode: "gres:gpu:8", CPUsPerTres: "gres:gpu:2",
				MemPerTres: "gres:gpu:1000", Features: "[gt_leaf4|gt_leaf1|gt_leaf2|gt_leaf3]", ExcNodes: "node16",
				MinNodes: 2, MaxNodes: 2, NumTasks: 2, MinCPUs: 1}}},
		{"97", PendingJob{ID: "97", Target: "97", UserIDKnown: true, Reason: "JobHeldUser", Submit: time.Unix(1796290976, 0).UTC(),
			Job: jobsubmit.Job{UserID: 65534, Name: "one gpu", Partition: "gpu", TresPerJob: "gres:gpu:1",
				Features: "[gt_node15|gt_node16|gt_node01|gt_node02|gt_node03|gt_node04|gt_node05|gt_node06]",
				MinNodes: 1, MaxNodes: 1, NumTasks: 1, MinCPUs: 1}}},
		// a task split off its array: it may be updated as 114_4 too
		{"118", PendingJob{ID: "118", Target: "118", UserIDKnown: true, TaskID: "114_4", Priority: 100, Reason: "Resources", Submit: time.Unix(1796290978, 0).UTC(), Eligible: time.Unix(1796290978, 0).UTC(),
			Job: jobsubmit.Job{Name: "arr", Partition: "gpu", TresPerJob: "gres:gpu:1", NumTasks: 1, MinCPUs: 1}}},
		// the array's record holds the tasks still pending, with the
		// limit; an update names them, not the array with its running tasks
		{"114", PendingJob{ID: "114", Target: "114_[0-3,5-9]", UserIDKnown: true, Priority: 4294901740, Reason: "Resources", Submit: time.Unix(1796290978, 0).UTC(), Eligible: time.Unix(1796290978, 0).UTC(),
			Job: jobsubmit.Job{Name: "arr", Partition: "gpu", TresPerJob: "gres:gpu:1", NumTasks: 1, MinCPUs: 1, ArrayInx: "0-3,5-9%3"}}},
		// a component is named with its offset: the leader's own ID would
		// update every component
		{"115+1", PendingJob{ID: "115+1", Target: "115+1", UserIDKnown: true, Priority: 4294901738, Reason: "None", Submit: time.Unix(1796290978, 0).UTC(), Eligible: time.Unix(1796290978, 0).UTC(),
			Job: jobsubmit.Job{Name: "het", Partition: "gpu", TresPerJob: "gres:gpu:16", Features: "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]",
				NumTasks: 1, MinCPUs: 1, PnMinMemory: 2000, HetJob: true, HetOffset: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			got, ok := byID[tc.id]
			if !ok {
				t.Fatalf("no pending job %s", tc.id)
			}
			if _, err := jobsubmit.ParseDecision(got.Decision); err != nil || got.Job.AdminComment != got.Decision {
				t.Errorf("decision %q: %v", got.Decision, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(PendingJob{}, "Decision", "Priority", "User", "Facts"),
				cmpopts.IgnoreFields(jobsubmit.Job{}, "AdminComment")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.want.Priority != 0 && got.Priority != tc.want.Priority {
				t.Errorf("priority %d, want %d", got.Priority, tc.want.Priority)
			}
		})
	}
}

// The bindings published with the snapshot: gangtopo's features of every
// bound pending job, under each name an update may use, with its owner's
// uid (97 is nobody's, 65534; the rest root's).
func TestBindingsOfPendingJobs(t *testing.T) {
	var pend []PendingJob
	if _, _, err := parseSqueueJSON(readTestdata(t, "lab16_pending_squeue.json"), "squeue --json", nil, pendingLists{decided: &pend}); err != nil {
		t.Fatal(err)
	}
	leaves := "[gt_leaf1|gt_leaf2|gt_leaf3|gt_leaf4]"
	want := []occupancy.Binding{
		{Job: "96", HasUser: true, Features: "[gt_leaf4|gt_leaf1|gt_leaf2|gt_leaf3]"},
		{Job: "97", User: 65534, HasUser: true, Features: "[gt_node15|gt_node16|gt_node01|gt_node02|gt_node03|gt_node04|gt_node05|gt_node06]"},
		{Job: "115+1", HasUser: true, Features: leaves},
		{Job: "117", HasUser: true, Features: leaves}, // after the user's (gt_spine1)&
	}
	if diff := cmp.Diff(want, Bindings(pend, jobsubmit.DefaultFeaturePrefix)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Every pending job is queued, with a decision or not: the quota's demand.
func TestQueuedJobs(t *testing.T) {
	var pend, all []PendingJob
	if _, _, err := parseSqueueJSON(readTestdata(t, "quota_squeue.json"), "squeue --json", nil, pendingLists{decided: &pend, all: &all}); err != nil {
		t.Fatal(err)
	}
	type q struct{ ID, Account, QOS, Reason, TresPerJob string }
	var got []q
	for _, p := range all {
		got = append(got, q{p.ID, p.Facts.Account, p.Facts.QOS, p.Reason, p.Job.TresPerJob})
	}
	want := []q{{"51", "teamb", "gt-teamb", "QOSGrpGRES", "gres:gpu:8"}, {"52", "teama", "gt-teama", "Resources", "gres:gpu:16"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(pend) != 0 {
		t.Errorf("%d pending jobs with a decision, want none (no plugin in that lab)", len(pend))
	}
}

// A dependent job's dependency and a held job's priority, as Slurm 22.05.8
// lists them (the controller re-binds neither, whatever the reason).
func TestPendingDependencyAndHeld(t *testing.T) {
	var pend, all []PendingJob
	if _, _, err := parseSqueueJSON(readTestdata(t, "dependency_squeue.json"), "squeue --json", nil, pendingLists{decided: &pend, all: &all}); err != nil {
		t.Fatal(err)
	}
	type q struct {
		ID, Reason, Dependency string
		Priority               uint32
	}
	var got []q
	for _, p := range all {
		got = append(got, q{p.ID, p.Reason, p.Dependency, p.Priority})
	}
	want := []q{{"2", "DependencyNeverSatisfied", "afterok:1(failed)", 4294901758}, {"3", "JobHeldUser", "", 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The holds of the pending jobs' decisions, for the plugin's held
// decisions: a decision without one (the controller's re-binding, an
// older plugin) names none.
func TestPendingHolds(t *testing.T) {
	pend := []PendingJob{
		{ID: "1", Decision: "gangtopo v1 placed gpus=2 domain=node02/nvl0 tier=nvlink bound=node02 snapshot=4 hold=0a1b2c3d4e5f: x"},
		{ID: "2", Decision: "admin's note | gangtopo v1 placed gpus=1 hold=ffffffffffff"},
		{ID: "3", Decision: "gangtopo v1 waiting gpus=32 bound=leaf1,leaf2"},
	}
	want := map[string]bool{"0a1b2c3d4e5f": true, "ffffffffffff": true}
	if diff := cmp.Diff(want, PendingHolds(pend)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A snapshot lists the pending holds only when the jobs came from squeue
// --json, which lists every pending job: from scontrol's text it cannot
// say a hold's job is gone, so it says nothing.
func TestBuildSnapshotPendingHolds(t *testing.T) {
	pend := []PendingJob{{ID: "1", Decision: "gangtopo v1 placed gpus=1 hold=0a1b2c3d4e5f"}}
	for _, listed := range []bool{false, true} {
		st := &State{Pending: pend, PendingListed: listed}
		s, _, err := BuildSnapshot(topotest.Lab16(), st, time.Unix(1, 0), jobsubmit.DefaultFeaturePrefix)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]bool
		if listed {
			want = map[string]bool{"0a1b2c3d4e5f": true}
		}
		if diff := cmp.Diff(want, s.PendingHolds); diff != "" {
			t.Errorf("listed %v (-want +got):\n%s", listed, diff)
		}
	}
}

// A decided job Slurm is requeueing, as 26.05.5 lists it while
// EpilogSlurmctld runs: it still holds its nodes (a job of the snapshot)
// and is listed among the jobs being requeued, not among the pending ones.
func TestRequeuingJob(t *testing.T) {
	var pend, all, requeuing []PendingJob
	jobs, _, err := parseSqueueJSON(readTestdata(t, "slurm-26.05.5/squeue_requeuing.json"), "squeue --json", nil, pendingLists{&pend, &all, &requeuing})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != "1" || jobs[0].NodeList != "node[05-06]" {
		t.Errorf("jobs holding nodes: %+v; want job 1 on node[05-06]", jobs)
	}
	if len(pend) != 0 || len(all) != 0 {
		t.Errorf("pending %v, queued %v; want none (it is not pending until the requeue ends)", pend, all)
	}
	if len(requeuing) != 1 || requeuing[0].ID != "1" || requeuing[0].Facts.Restarts != 1 || requeuing[0].Decision == "" {
		t.Errorf("requeuing %+v; want job 1, restart count 1, with its decision", requeuing)
	}
}

// A decided job Slurm 22.05.8 has requeued after a node failure: pending,
// restart count 1, and its begin time (eligible_time) 121 s after the
// submit time the requeue set: Slurm's requeue delay, which the
// controller's rebind.restart_at_once recognises.
func TestRequeuedJobBeginTime(t *testing.T) {
	var pend, all, requeuing []PendingJob
	if _, _, err := parseSqueueJSON(readTestdata(t, "slurm-22.05.8/squeue_requeued.json"), "squeue --json", nil, pendingLists{&pend, &all, &requeuing}); err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || len(requeuing) != 0 {
		t.Fatalf("pending %+v, requeuing %+v; want job 1 pending", pend, requeuing)
	}
	pj := pend[0]
	if pj.Facts.Restarts != 1 || pj.Reason != "BeginTime" || pj.Eligible.Sub(pj.Submit) != 121*time.Second {
		t.Errorf("restarts %d, reason %s, submit %v, begin %v; want 1, BeginTime, the begin 121 s after the submit",
			pj.Facts.Restarts, pj.Reason, pj.Submit, pj.Eligible)
	}
}
