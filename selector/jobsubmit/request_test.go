package jobsubmit

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The job fields below are what Slurm 22.05 puts into job_desc_msg_t for
// each command line (logged from a real slurmctld; see docs/admin.md).
func TestBuildRequest(t *testing.T) {
	leaf := request.Option{Tier: topology.TierLeaf}
	tests := []struct {
		name string
		job  Job
		want request.Request
	}{
		{"--gpus=32", Job{TresPerJob: "gres:gpu:32", MinCPUs: 1},
			request.Request{GPUs: 32, CPUMilli: 1000, Tier: topology.TierLeaf}},
		{"--gpus=h100:16 --cpus-per-gpu=2 --mem-per-gpu=1000", Job{TresPerJob: "gres:gpu:h100:16", CPUsPerTres: "gres:gpu:2", MemPerTres: "gres:gpu:1000"},
			// 16 GPUs x 2 CPUs, 16 x 1000 MiB
			request.Request{GPUs: 16, Models: []string{"h100"}, CPUMilli: 32000, MemMiB: 16000, Tier: topology.TierLeaf}},
		{"-N2 --gpus-per-node=8", Job{TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, MinCPUs: 2},
			request.Request{GPUs: 16, Nodes: 2, GPUsPerNode: 8, CPUMilli: 2000, Tier: topology.TierLeaf}},
		{"--gres=gpu:4 (one node)", Job{TresPerNode: "gres:gpu:4", MinCPUs: 1},
			request.Request{GPUs: 4, Nodes: 1, GPUsPerNode: 4, CPUMilli: 1000, Tier: topology.TierLeaf}},
		// 4 tasks x 2 GPUs, each task's 2 on one node
		{"--gpus-per-task=2 -n4", Job{TresPerTask: "gres:gpu:2", NumTasks: 4, MinCPUs: 4},
			request.Request{GPUs: 8, CPUMilli: 4000, Tier: topology.TierLeaf, TaskGPUs: 2}},
		// without -n Slurm sets the task count from the nodes
		// (gres_job_state_validate): one task per node, or
		// --ntasks-per-node per node, or one task without -N
		{"--gpus-per-task=2", Job{TresPerTask: "gres:gpu:2", MinCPUs: 1},
			request.Request{GPUs: 2, CPUMilli: 1000, Tier: topology.TierLeaf, TaskGPUs: 2}},
		{"--gpus-per-task=2 -N3", Job{TresPerTask: "gres:gpu:2", MinNodes: 3, MaxNodes: 3, MinCPUs: 3},
			request.Request{GPUs: 6, Nodes: 3, CPUMilli: 3000, Tier: topology.TierLeaf, TaskGPUs: 2}},
		{"--gpus-per-task=1 -N2 --ntasks-per-node=4", Job{TresPerTask: "gres:gpu:1", MinNodes: 2, MaxNodes: 2, NtasksPerNode: 4, MinCPUs: 8},
			// 2 nodes x 4 tasks x 1 GPU
			request.Request{GPUs: 8, Nodes: 2, CPUMilli: 8000, Tier: topology.TierLeaf}},
		{"--gpus=2 --mem=5000", Job{TresPerJob: "gres:gpu:2", PnMinMemory: 5000, MinCPUs: 1},
			request.Request{GPUs: 2, CPUMilli: 1000, MemMiB: 5000, Tier: topology.TierLeaf}},
		{"--gpus=2 --mem-per-cpu=100 -n3", Job{TresPerJob: "gres:gpu:2", PnMinMemory: memPerCPU | 100, NumTasks: 3, MinCPUs: 3},
			// 3 CPUs x 100 MiB
			request.Request{GPUs: 2, CPUMilli: 3000, MemMiB: 300, Tier: topology.TierLeaf}},
		{"--gpus=8 -p gpu,big -w node[01-02] -x node03", Job{TresPerJob: "gres:gpu:8", Partition: "gpu,big", ReqNodes: "node[01-02]", ExcNodes: "node03"},
			request.Request{GPUs: 8, CPUMilli: 1000, Tier: topology.TierLeaf, Partitions: []string{"gpu", "big"},
				Allowed: []string{"node01", "node02"}, Excluded: []string{"node03"}}},
		// jobs: all: 4 tasks x 2 CPUs, 1000 MiB per CPU
		{"CPU-only -n4 -c2 --mem-per-cpu=1000", Job{NumTasks: 4, CPUsPerTask: 2, PnMinMemory: memPerCPU | 1000, MinCPUs: 8},
			request.Request{Nodes: 1, CPUMilli: 8000, MemMiB: 8000, Tier: topology.TierLeaf}},
		// 47 of 100 shards per GPU: 470 milli of one GPU
		{"--gres=shard:47", Job{TresPerNode: "gres:shard:47", MinCPUs: 2},
			request.Request{GPUs: 1, Nodes: 1, Milli: 470, CPUMilli: 2000, Tier: topology.TierLeaf}},
		{"a constraint of GPU model features", Job{TresPerJob: "gres:gpu:2", Features: "gt_H100|gt_h100"},
			request.Request{GPUs: 2, Models: []string{"h100", "h100"}, CPUMilli: 1000, Tier: topology.TierLeaf}},
		{"a constraint that is not only models says nothing of models", Job{TresPerJob: "gres:gpu:2", Features: "gt_h100&ib"},
			request.Request{GPUs: 2, CPUMilli: 1000, Tier: topology.TierLeaf}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := decideFixture(t, func(p *Policy) { p.ShardsPerGPU = 100 }, nil)
			got, err := d.buildRequest(tc.job, leaf)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildRequestRefusals(t *testing.T) {
	tests := []struct {
		name        string
		job         Job
		want        string
		unsupported bool // passes untouched rather than refused
	}{
		{"gpus per socket", Job{TresPerSocket: "gres:gpu:1"}, "--gpus-per-socket is not handled", true},
		{"node range", Job{TresPerJob: "gres:gpu:4", MinNodes: 2, MaxNodes: 3}, "a node count range (-N 2-3)", true},
		{"gpus per task with -c and no tasks", Job{TresPerTask: "gres:gpu:2", MinNodes: 2, MaxNodes: 2, CPUsPerTask: 4}, "--gpus-per-task without -n", true},
		{"gpus per task over a node range", Job{TresPerTask: "gres:gpu:2", MinNodes: 2, MaxNodes: 4}, "a node count range (-N 2-4)", true},
		{"two models", Job{TresPerJob: "gres:gpu:h100:8", TresPerNode: "gres:gpu:a100:8", MinNodes: 1}, `GPU models "h100" and "a100" differ`, false},
		{"bad count", Job{TresPerJob: "gres:gpu:h100:x"}, `count "x" is not a number`, false},
		{"bad node list", Job{TresPerJob: "gres:gpu:1", ReqNodes: "node[1-"}, `--nodelist "node[1-"`, false},
		// lab16 has 16 nodes: its bound is max(2 x 16, 64) = 64 names, and
		// a longer list is left to Slurm; 65 names, in two terms
		{"node list past the bound", Job{TresPerJob: "gres:gpu:1", ReqNodes: "node[0-64]"}, "a --nodelist of more than 64 nodes", true},
		{"exclude list past the bound", Job{TresPerJob: "gres:gpu:1", ExcNodes: "a[0-9],node[0-54]"}, "a --exclude of more than 64 nodes", true},
		{"2^20 names, refused before one is built", Job{TresPerJob: "gres:gpu:1", ExcNodes: "n[0-1048574]"}, "a --exclude of more than 64 nodes", true},
		{"CPU-only over two nodes", Job{MinNodes: 2, MaxNodes: 2, NumTasks: 2}, "a CPU-only job over 2 nodes", true},
		{"more shards than a GPU has", Job{TresPerNode: "gres:shard:150"}, "150 shards, more than one GPU's 100", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := decideFixture(t, func(p *Policy) { p.ShardsPerGPU = 100 }, nil)
			_, err := d.buildRequest(tc.job, request.Option{Tier: topology.TierLeaf})
			var u *unsupportedError
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &u) != tc.unsupported {
				t.Errorf("got %v, want an error containing %q (unsupported: %v)", err, tc.want, tc.unsupported)
			}
		})
	}
}

func TestParseGPUTres(t *testing.T) {
	tests := []struct {
		in   string
		want gpuTres
		ok   bool
	}{
		{"gres:gpu:16", gpuTres{Count: 16}, true},
		{"gres:gpu:h100:16", gpuTres{Model: "h100", Count: 16}, true},
		{"gres:gpu", gpuTres{Count: 1}, true},
		{"gres:gpu:h100", gpuTres{Model: "h100", Count: 1}, true},
		{"gres:nic:1,gres:gpu:2", gpuTres{Count: 2}, true},
		{"gres/gpu=4", gpuTres{Count: 4}, true},
		{"gres:nic:1", gpuTres{}, false},
		{"", gpuTres{}, false},
	}
	for _, tc := range tests {
		got, ok, err := parseGPUTres(tc.in)
		if err != nil || ok != tc.ok || got != tc.want {
			t.Errorf("parseGPUTres(%q) = %+v, %v, %v; want %+v, %v", tc.in, got, ok, err, tc.want, tc.ok)
		}
	}
}
