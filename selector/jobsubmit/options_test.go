package jobsubmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// holesFixture is a decider under jobs: all over Lab16 (16 nodes of 8
// GPUs, 64 CPUs, 1,000,000 MiB; leaf2 = node05-08) whose node05-08 each
// run six 1-GPU jobs of one CPU: 2 GPUs and 58 CPUs free there, every
// other node idle. It is the state resource_options_test.go sets up on
// the lab.
func holesFixture(t *testing.T) (*Decider, *occupancy.Snapshot) {
	t.Helper()
	d, s := decideFixture(t, func(p *Policy) { p.Jobs = ScopeAll }, nil)
	c := d.Cluster()
	for _, name := range []string{"node05", "node06", "node07", "node08"} {
		id, _ := c.NodeByName(name)
		a := occupancy.NodeAlloc{Node: id, GPUs: []int{0, 1, 2, 3, 4, 5}, Milli: 1000, CPUMilli: 6000}
		if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{a}}); err != nil {
			t.Fatal(err)
		}
	}
	return d, s
}

// outcome is what TestResourceOptions compares of a decision.
type outcome struct {
	Action  Action
	Verdict Verdict
	Cause   Cause
	Domain  string // where the engine put it (placed)
	Shape   string
}

func outcomeOf(r Result) outcome {
	return outcome{Action: r.Action, Verdict: r.Decision.Verdict, Cause: r.Decision.Cause, Domain: r.Decision.Domain, Shape: r.Decision.Shape}
}

var (
	passed  = outcome{Action: Modify, Verdict: VerdictUntouched, Cause: CauseUnsupported}
	refused = outcome{Action: Reject, Verdict: VerdictRefused}
)

func placedOn(domain string) outcome {
	return outcome{Action: Modify, Verdict: VerdictPlaced, Domain: domain}
}

// TestResourceOptions: every option that changes how Slurm counts a job's
// resources, as Slurm 22.05's sbatch fills job_desc_msg_t (min_cpus is
// sbatch's own count: tasks x -c, or the node count under --overcommit),
// on holesFixture. A job is placed as Slurm counts it, passed to Slurm
// when gangtopo cannot model it, and refused only where Slurm refuses it
// too (the lab's table: tests/e2e/resource_options_test.go).
func TestResourceOptions(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want outcome
	}{
		// CPU-only jobs go where they strand the fewest GPUs: a node of
		// leaf2 (2 GPUs left) rather than an idle one (8)
		{"-n 1", Job{NumTasks: 1, MinCPUs: 1}, placedOn("node05")},
		// 58 CPUs free in leaf2: 64 go to an idle node
		{"-n 64", Job{NumTasks: 64, MinCPUs: 64}, placedOn("node01")},
		// 65 tasks > 64 CPUs of any node: Slurm spreads them over 2 nodes
		{"-n 65", Job{NumTasks: 65, MinCPUs: 65}, passed},
		// ... unless held to one: 65 > 1 x 64, Slurm refuses
		{"-N 1 -n 65", Job{NumTasks: 65, MinCPUs: 65, MinNodes: 1, MaxNodes: 1}, refused},
		// 2 tasks x 40 CPUs = 80 > 64: two nodes, or refused on one
		{"-n 2 -c 40", Job{NumTasks: 2, CPUsPerTask: 40, MinCPUs: 80}, passed},
		{"-N 1 -n 2 -c 40", Job{NumTasks: 2, CPUsPerTask: 40, MinCPUs: 80, MinNodes: 1, MaxNodes: 1}, refused},
		// one task is never split: 65 CPUs, --overcommit or not
		{"-n 1 -c 65", Job{NumTasks: 1, CPUsPerTask: 65, MinCPUs: 65}, refused},
		{"-n 1 -c 65 --overcommit", Job{NumTasks: 1, CPUsPerTask: 65, MinCPUs: 1, Overcommit: true}, refused},
		// --ntasks-per-node=65 x 1 CPU > 64 on its one node
		{"-N 1 --ntasks-per-node=65", Job{NtasksPerNode: 65, MinNodes: 1, MaxNodes: 1, MinCPUs: 65}, refused},
		// --mincpus: 64 CPUs on its node (an idle one); 65 on none
		{"-n 1 --mincpus=64", Job{NumTasks: 1, MinCPUs: 1, PnMinCPUs: 64}, placedOn("node01")},
		{"-n 1 --mincpus=65", Job{NumTasks: 1, MinCPUs: 1, PnMinCPUs: 65}, refused},

		// --overcommit: 22.05 runs 65 tasks on one CPU of node02 (issue
		// 22): gangtopo's count (65) fits no node, and Slurm's does
		{"-N 1 -w node02 -n 65 --overcommit", Job{NumTasks: 65, MinCPUs: 1, MinNodes: 1, MaxNodes: 1, ReqNodes: "node02", Overcommit: true}, passed},
		{"-n 65 --overcommit", Job{NumTasks: 65, MinCPUs: 1, Overcommit: true}, passed},
		{"-N 1 -n 2 -c 40 --overcommit", Job{NumTasks: 2, CPUsPerTask: 40, MinCPUs: 1, MinNodes: 1, MaxNodes: 1, Overcommit: true}, passed},
		// 4 tasks counted in full fit leaf2's 58 free CPUs
		{"-n 4 --overcommit", Job{NumTasks: 4, MinCPUs: 1, Overcommit: true}, placedOn("node05")},
		{"--gpus=1 -n 65 --overcommit", Job{TresPerJob: "gres:gpu:1", NumTasks: 65, MinCPUs: 1, Overcommit: true}, passed},

		// sharing: --oversubscribe changes nothing gangtopo counts;
		// --exclusive takes an idle node; =user is not in the snapshot
		{"-n 1 --oversubscribe", Job{NumTasks: 1, MinCPUs: 1, Shared: SharedOversubscribe}, placedOn("node05")},
		{"-n 1 --exclusive", Job{NumTasks: 1, MinCPUs: 1, Shared: SharedExclusive}, placedOn("node01")},
		{"--gpus=1 --exclusive", Job{TresPerJob: "gres:gpu:1", MinCPUs: 1, Shared: SharedExclusive}, placedOn("node01/nvl0")},
		{"--gpus=1", Job{TresPerJob: "gres:gpu:1", MinCPUs: 1}, placedOn("node05/nvl0")},
		{"-n 1 --exclusive=user", Job{NumTasks: 1, MinCPUs: 1, Shared: SharedUser}, passed},
		{"--gpus=1 --exclusive=mcs", Job{TresPerJob: "gres:gpu:1", MinCPUs: 1, Shared: SharedMCS}, passed},

		// memory: --mem per node is exact; --mem-per-cpu x 64 CPUs =
		// 1,280,000 MiB fits no node, but Slurm counts a node's share
		// (one task's 20,000 MiB); --mem-per-gpu likewise
		{"-n 1 --mem=0", Job{NumTasks: 1, MinCPUs: 1, MemWholeNode: true}, placedOn("node05")},
		{"-n 1 --mem=1000000", Job{NumTasks: 1, MinCPUs: 1, PnMinMemory: 1000000}, placedOn("node05")},
		{"-n 1 --mem=1000001", Job{NumTasks: 1, MinCPUs: 1, PnMinMemory: 1000001}, refused},
		{"-n 64 --mem-per-cpu=20000", Job{NumTasks: 64, MinCPUs: 64, PnMinMemory: memPerCPU | 20000}, passed},
		{"-n 1 --mem-per-cpu=1000001", Job{NumTasks: 1, MinCPUs: 1, PnMinMemory: memPerCPU | 1000001}, refused},
		{"--gpus=1 --mem-per-gpu=1000001", Job{TresPerJob: "gres:gpu:1", MinCPUs: 1, MemPerTres: "gres:gpu:1000001"}, passed},
		{"--gpus=1 --mem=1000001", Job{TresPerJob: "gres:gpu:1", MinCPUs: 1, PnMinMemory: 1000001}, refused},

		// cores and threads: Lab16 has one thread per core, so 1 is
		// Slurm's count too; more is Slurm's to judge
		{"-n 64 --hint=nomultithread", Job{NumTasks: 64, MinCPUs: 64, ThreadsPerCore: 1, NtasksPerCore: 1}, placedOn("node01")},
		{"-n 1 --threads-per-core=2", Job{NumTasks: 1, MinCPUs: 1, ThreadsPerCore: 2}, passed},
		{"-N 1 -n 128 --ntasks-per-core=2", Job{NumTasks: 128, MinCPUs: 128, MinNodes: 1, MaxNodes: 1, NtasksPerCore: 2}, passed},
		{"-n 64 --sockets-per-node=2", Job{NumTasks: 64, MinCPUs: 64, SocketsPerNode: 2}, passed},
		{"-n 64 --ntasks-per-socket=32", Job{NumTasks: 64, MinCPUs: 64, NtasksPerSocket: 32}, passed},

		// GPUs with tasks: --gpus=1 -n 65 runs its tasks on 2 nodes, one
		// without a GPU; 1 CPU-bound GPU (--cpus-per-gpu=65) never fits
		{"--gpus=1 -n 65", Job{TresPerJob: "gres:gpu:1", NumTasks: 65, MinCPUs: 65}, passed},
		{"--gpus=1 --cpus-per-gpu=65", Job{TresPerJob: "gres:gpu:1", CPUsPerTres: "gres:gpu:65", MinCPUs: 1}, refused},
		// 8 GPUs x 9 CPUs = 72 > 64 on each of its nodes
		{"--gpus-per-node=8 --cpus-per-gpu=9", Job{TresPerNode: "gres:gpu:8", CPUsPerTres: "gres:gpu:9", MinCPUs: 1}, refused},
		{"--gres=gpu:9", Job{TresPerNode: "gres:gpu:9", MinCPUs: 1}, refused},
		// 2 tasks x 40 CPUs with 2 GPUs: one GPU and task per node (40 of
		// 58 free CPUs fit leaf2's holes), shaped 2x1
		{"--gpus=2 -n 2 -c 40", Job{TresPerJob: "gres:gpu:2", NumTasks: 2, CPUsPerTask: 40, MinCPUs: 80},
			outcome{Action: Modify, Verdict: VerdictPlaced, Domain: "leaf2", Shape: "2x1"}},
		// 3 tasks x 40 CPUs: the engine's 2 nodes (60 CPUs per GPU) hold
		// only one task of 40 each: no -N 2, Slurm takes a third node
		{"--gpus=2 -n 3 -c 40", Job{TresPerJob: "gres:gpu:2", NumTasks: 3, CPUsPerTask: 40, MinCPUs: 120},
			outcome{Action: Modify, Verdict: VerdictPlaced, Domain: "leaf1"}},
		// 7 GPUs on exactly 3 nodes: Slurm's 3+2+2
		{"-N 3 --gpus=7", Job{TresPerJob: "gres:gpu:7", MinNodes: 3, MaxNodes: 3, MinCPUs: 3}, passed},
		// 3 tasks of 2 GPUs on exactly 2 nodes: Slurm's 4+2
		{"-N 2 -n 3 --gpus-per-task=2", Job{TresPerTask: "gres:gpu:2", NumTasks: 3, MinNodes: 2, MaxNodes: 2, MinCPUs: 3}, passed},
		// 4 GPUs x 2 tasks x 8 CPUs = 64 CPUs: an idle node
		{"--gpus=4 --ntasks-per-gpu=2 -c 8", Job{TresPerJob: "gres:gpu:4", NtasksPerTres: 2, CPUsPerTask: 8, MinCPUs: 8}, placedOn("node01/nvl0")},

		// node counts and layout
		{"-N 1-2 -n 100", Job{NumTasks: 100, MinCPUs: 100, MinNodes: 1, MaxNodes: 2}, passed},
		{"-n 4 --spread-job", Job{NumTasks: 4, MinCPUs: 4, SpreadJob: true}, passed},
		{"-n 1 --contiguous", Job{NumTasks: 1, MinCPUs: 1, Contiguous: true}, placedOn("node05")},
		{"--gpus=16 --contiguous", Job{TresPerJob: "gres:gpu:16", MinCPUs: 1, Contiguous: true}, passed},
		{"--gpus=16 --switches=1", Job{TresPerJob: "gres:gpu:16", MinCPUs: 1, ReqSwitch: 1},
			outcome{Action: Modify, Verdict: VerdictPlaced, Domain: "leaf1", Shape: "2x8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, s := holesFixture(t)
			tc.job.Partition = "gpu"
			res := decide(t, d, s, tc.job)
			if diff := cmp.Diff(tc.want, outcomeOf(res)); diff != "" {
				t.Errorf("(-want +got):\n%s\n%s", diff, res.Decision)
			}
		})
	}
}

// TestResourceCounts: the request the engine gets, with the arithmetic.
func TestResourceCounts(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		want counted
	}{
		// 4 tasks x 2 CPUs; --overcommit does not lower the count
		{"-n 4 -c 2 --overcommit", Job{NumTasks: 4, CPUsPerTask: 2, MinCPUs: 1, Overcommit: true}, counted{CPUMilli: 8000}},
		// --mincpus=16 on its one node beats 1 task x 1 CPU
		{"-n 1 --mincpus=16", Job{NumTasks: 1, MinCPUs: 1, PnMinCPUs: 16}, counted{CPUMilli: 16000}},
		// 4 GPUs x 2 tasks x 3 CPUs
		{"--gpus=4 --ntasks-per-gpu=2 -c 3", Job{TresPerJob: "gres:gpu:4", NtasksPerTres: 2, CPUsPerTask: 3, MinCPUs: 3}, counted{CPUMilli: 24000}},
		{"--exclusive", Job{NumTasks: 1, MinCPUs: 1, Shared: SharedExclusive}, counted{CPUMilli: 1000, WholeNodes: true}},
		{"--mem=0", Job{NumTasks: 1, MinCPUs: 1, MemWholeNode: true}, counted{CPUMilli: 1000, AllMemory: true}},
		// 3 tasks x 2 GPUs, each task's GPUs on one node
		{"-n 3 --gpus-per-task=2", Job{TresPerTask: "gres:gpu:2", NumTasks: 3, MinCPUs: 3}, counted{CPUMilli: 3000, TaskGPUs: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := holesFixture(t)
			r, err := d.JobRequest(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			got := counted{CPUMilli: r.CPUMilli, MemMiB: r.MemMiB, TaskGPUs: r.TaskGPUs, WholeNodes: r.WholeNodes, AllMemory: r.AllMemory}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// counted is the part of request.Request TestResourceCounts compares.
type counted struct {
	CPUMilli, MemMiB      int64
	TaskGPUs              int
	WholeNodes, AllMemory bool
}

// GPUCount (what the quota counts of a waiting job) counts the GPUs of a
// job the decision passes to Slurm too.
func TestGPUCountOfPassedJobs(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want int
	}{
		{Job{TresPerJob: "gres:gpu:7", MinNodes: 3, MaxNodes: 3}, 7},                   // -N 3 --gpus=7
		{Job{TresPerTask: "gres:gpu:2", NumTasks: 3, MinNodes: 2, MaxNodes: 2}, 6},     // 3 tasks x 2
		{Job{TresPerJob: "gres:gpu:1", NumTasks: 65, MinCPUs: 1, Overcommit: true}, 1}, // --overcommit
	} {
		if got, err := GPUCount(tc.job); err != nil || got != tc.want {
			t.Errorf("%+v: %d GPUs (%v), want %d", tc.job, got, err, tc.want)
		}
	}
}
