package deployed

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestSbatchJob(t *testing.T) {
	tests := []struct {
		name string
		req  request.Request
		want jobsubmit.Job
	}{
		// 2 GPUs of one model, 3.5 CPUs: --gpus=h100:2 -N 1 --cpus-per-gpu=2 (rounded up)
		{"one-node whole GPUs of one model", request.Request{JobID: "p1", GPUs: 2, Nodes: 1, Models: []string{"H100"}, CPUMilli: 3500, MemMiB: 1001},
			jobsubmit.Job{Name: "p1", TresPerJob: "gres:gpu:h100:2", MinNodes: 1, MaxNodes: 1, MinCPUs: 4,
				CPUsPerTres: "gres:gpu:2", MemPerTres: "gres:gpu:501"}},
		{"several models become a constraint", request.Request{JobID: "p2", GPUs: 1, Nodes: 1, Models: []string{"V100M16", "V100M32"}, CPUMilli: 1000},
			jobsubmit.Job{Name: "p2", TresPerJob: "gres:gpu:1", MinNodes: 1, MaxNodes: 1, MinCPUs: 1, CPUsPerTres: "gres:gpu:1",
				Features: "gt_v100m16|gt_v100m32"}},
		// 470 milli = 470 of 1000 shards; shards have no type: the model is a constraint
		{"a share", request.Request{JobID: "p3", GPUs: 1, Milli: 470, Models: []string{"T4"}, CPUMilli: 2500, MemMiB: 100},
			jobsubmit.Job{Name: "p3", TresPerNode: "gres:shard:470", NumTasks: 1, CPUsPerTask: 3, MinCPUs: 3, PnMinMemory: 100,
				MinNodes: 1, MaxNodes: 1, Features: "gt_t4"}},
		// the tier is not written: sbatch refuses --gang-topology without GPUs
		{"no GPUs", request.Request{JobID: "p4", CPUMilli: 8000, MemMiB: 4096, Tier: topology.TierNode},
			jobsubmit.Job{Name: "p4", NumTasks: 1, CPUsPerTask: 8, MinCPUs: 8, PnMinMemory: 4096, MinNodes: 1, MaxNodes: 1}},
		{"a gang with its option", request.Request{JobID: "g", GPUs: 32, Tier: topology.TierLeaf, Mode: request.Preferred, CPUMilli: 128000},
			jobsubmit.Job{Name: "g", GangTopology: "leaf:preferred", TresPerJob: "gres:gpu:32", MinCPUs: 128, CPUsPerTres: "gres:gpu:4"}},
		{"GPUs per node", request.Request{JobID: "n", GPUs: 16, GPUsPerNode: 8, CPUMilli: 16000},
			jobsubmit.Job{Name: "n", TresPerNode: "gres:gpu:8", MinNodes: 2, MaxNodes: 2, MinCPUs: 16, CPUsPerTres: "gres:gpu:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SbatchJob(&tc.req, jobsubmit.DefaultFeaturePrefix)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := SbatchJob(&request.Request{JobID: "bad", GPUs: 2, Milli: 500}, "gt_"); err == nil {
		t.Error("a share of 2 GPUs was accepted")
	}
}
