package jobsubmit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/place"
)

func TestArrayTasks(t *testing.T) {
	tests := []struct {
		inx          string
		tasks, limit int
		err          string
	}{
		{inx: "0-49", tasks: 50},
		{inx: "0-49%5", tasks: 50, limit: 5},
		{inx: "7", tasks: 1},
		{inx: "1,3,5-11:2", tasks: 6}, // 1,3 and 5,7,9,11
		{inx: "0-9,5-14", tasks: 15},  // 5-9 counted once
		{inx: "0-15:4%2", tasks: 4, limit: 2},
		{inx: "9-3", err: `range "9-3" ends before it starts`},
		{inx: "0-9:0", err: `step "0" is not a positive count`},
		{inx: "0-9%x", err: `task limit "x" is not a count`},
		{inx: "", err: `task index "" is not an index`},
		{inx: "0-99999999", err: `task index "99999999" is not an index`},
		// the work is bounded: job_submit sees the list before Slurm checks it
		{inx: "0-4194304,0-4194304", err: "more than 4194305 task indices"},
	}
	for _, tc := range tests {
		tasks, limit, err := ArrayTasks(tc.inx)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ArrayTasks(%q): error %v, want %q", tc.inx, err, tc.err)
			}
			continue
		}
		if err != nil || tasks != tc.tasks || limit != tc.limit {
			t.Errorf("ArrayTasks(%q) = %d, %d, %v; want %d, %d", tc.inx, tasks, limit, err, tc.tasks, tc.limit)
		}
	}
}

// An array of 1-GPU tasks is placed task by task: the binding lists the
// nodes all of them were placed on, in the order the engine filled them,
// then the alternatives a job gets; every task is held.
func TestDecideArrayBindsEveryTask(t *testing.T) {
	// holes: node02 has 2 GPUs free, node06 3; node01, 03, 04 full
	busy := with(with(full("node01", "node03", "node04"), "node02", 6), "node06", 5)
	tests := []struct {
		name      string
		inx       string
		tasks     int // placed and held
		bound     []string
		decTasks  int
		textAdded string
	}{
		{name: "a job", inx: "", tasks: 1,
			bound: []string{"node02", "node06", "node05", "node07", "node08", "node09", "node10", "node11"}},
		// 2 in node02's hole, 3 in node06's, 3 on node05: three nodes
		// and the seven alternatives a job gets
		{name: "eight tasks", inx: "0-7", tasks: 8, decTasks: 8,
			bound: []string{"node02", "node06", "node05", "node07", "node08", "node09", "node10", "node11", "node12", "node13"}},
		// 2 + 2 in the holes: two nodes and seven alternatives
		{name: "limit of 4 at once", inx: "0-49%4", tasks: 4, decTasks: 4,
			bound: []string{"node02", "node06", "node05", "node07", "node08", "node09", "node10", "node11", "node12"}},
		// 5 in the holes, then 8 per whole node: 50 tasks take node02,
		// node06 and six whole nodes (5 + 5x8 + 5 on node11), then seven
		// alternatives
		{name: "fifty tasks", inx: "0-49", tasks: 50, decTasks: 50,
			bound: []string{"node02", "node06", "node05", "node07", "node08", "node09", "node10", "node11", "node12",
				"node13", "node14", "node15", "node16"}},
		// 5 + 11 whole nodes x 8 = 93 GPUs free: 100 tasks do not all fit
		{name: "more tasks than GPUs", inx: "0-99", tasks: 93, decTasks: 100,
			textAdded: "93 of the 100 tasks that may run at once have room now"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, nil, busy)
			withFeatures(t, s)
			j := Job{TresPerJob: "gres:gpu:1", ArrayInx: tc.inx}
			p := d.Prepare(j)
			pl := d.Place(place.New(d.Cluster(), place.Options{MaxCandidates: 8}), s, p, nil)
			if len(pl.Tasks) != tc.tasks {
				t.Errorf("%d tasks placed, want %d", len(pl.Tasks), tc.tasks)
			}
			res, err := d.Rewrite(j, p, pl, s, 7)
			if err != nil {
				t.Fatal(err)
			}
			if tc.bound != nil {
				if diff := cmp.Diff(tc.bound, res.Decision.Bound); diff != "" {
					t.Errorf("bound (-want +got):\n%s", diff)
				}
			}
			if res.Decision.Tasks != tc.decTasks || !strings.Contains(res.Decision.Text, tc.textAdded) {
				t.Errorf("decision %q, want tasks=%d and %q", res.Decision, tc.decTasks, tc.textAdded)
			}
		})
	}
}

// Without node features, an array's tasks keep the whole nodes they were
// placed on allowed; the other whole nodes are excluded.
func TestDecideArrayExclusions(t *testing.T) {
	d, s := decideFixture(t, nil, with(full("node01", "node03", "node04"), "node02", 6))
	res := decide(t, d, s, Job{TresPerJob: "gres:gpu:1", ArrayInx: "0-9"})
	// 2 tasks in node02's hole, 8 on node05: node06-16 stay excluded
	if res.ExcNodes == nil || *res.ExcNodes != "node[06-16]" || res.Decision.Excluded != "node[06-16]" {
		t.Errorf("exclusions %v, decision %q; want node[06-16]", res.ExcNodes, res.Decision)
	}
}

func TestJobLabel(t *testing.T) {
	for _, tc := range []struct {
		j    Job
		want string
	}{
		{Job{Name: "a", UserID: 5}, `job "a" of uid 5`},
		{Job{Name: "a", UserID: 5, ArrayInx: "0-9%2"}, `job "a" (array "0-9%2") of uid 5`},
		{Job{Name: "a", UserID: 5, HetJob: true, HetOffset: 1}, `job "a" (hetjob component 1) of uid 5`},
	} {
		if got := JobLabel(tc.j); got != tc.want {
			t.Errorf("JobLabel = %s, want %s", got, tc.want)
		}
	}
}
