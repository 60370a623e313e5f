package jobsubmit

import (
	"strings"
	"testing"
)

// forged is what a user would put into a value to forge slurmctld log
// lines: a newline followed by a line of its own, a carriage return and a
// terminal escape. GANG_TOPOLOGY can be set directly (a private plugstack,
// libslurm), so nothing guarantees the SPANK client parsed it first.
const forged = "\nslurmctld - gangtopo v1 placed domain=leaf1\r\x07"

// controlByte returns the first ASCII control byte of s and its offset, or
// -1: a log line or a user message must hold none (the C shim passes Log
// and ErrMsg to Slurm as they are).
func controlByte(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return i
		}
	}
	return -1
}

func checkNoControl(t *testing.T, what string, res Result) {
	t.Helper()
	for field, s := range map[string]string{"Log": res.Log, "ErrMsg": res.ErrMsg, "Decision": res.Decision.String()} {
		if i := controlByte(s); i >= 0 {
			t.Errorf("%s: %s holds control byte %#x at %d: %q", what, field, s[i], i, s)
		}
	}
}

// Every path that refuses a job or leaves it as submitted with a log line,
// each fed a value with control characters where the user's words reach
// the message: the Log and ErrMsg lines must quote them.
func TestRefusalsQuoteUserValues(t *testing.T) {
	base := Job{UserID: 1000, Name: "train" + forged, TresPerJob: "gres:gpu:8"}
	cases := []struct {
		name string
		edit func(*Job)
		// want: the action, and a fragment of Log that proves the path ran
		action Action
		want   string
	}{
		{"option: tier", func(j *Job) { j.GangTopology = "leaf" + forged }, Reject, "unknown tier"},
		{"option: mode", func(j *Job) { j.GangTopology = "leaf:" + forged }, Reject, "unknown mode"},
		{"option: setting", func(j *Job) { j.GangTopology = "leaf,colour" + forged }, Reject, "unknown setting"},
		{"option: slice value", func(j *Job) { j.GangTopology = "leaf,slice=1" + forged }, Reject, "is not a GPU count"},
		{"option: slice twice", func(j *Job) { j.GangTopology = "leaf,slice=8,slice=4" + forged }, Reject, "slice given twice"},
		{"option without GPUs", func(j *Job) { j.TresPerJob, j.GangTopology = "", "leaf"+forged }, Reject, "needs GPUs"},
		{"GPU count", func(j *Job) { j.TresPerJob = "gres:gpu:h100:8" + forged }, Reject, "is not a number"},
		{"GPU item", func(j *Job) { j.TresPerNode = "gres:gpu:a:b:" + forged }, Reject, "want gpu[:TYPE][:COUNT]"},
		{"two GPU requests", func(j *Job) { j.TresPerJob = "gres:gpu:1,gres:gpu:2" + forged }, Reject, "more than one GPU request"},
		{"two models", func(j *Job) { j.TresPerJob, j.TresPerNode = "gres:gpu:h100:8", "gres:gpu:a"+forged+":8" }, Reject, "differ between"},
		{"unknown model", func(j *Job) { j.TresPerJob = "gres:gpu:h" + forged + "100:8" }, Reject, "is not in cluster"},
		{"cpus per GPU", func(j *Job) { j.CPUsPerTres = "gres:gpu:a:b" + forged }, Reject, "is not a number"},
		{"memory per GPU", func(j *Job) { j.MemPerTres = "gres:gpu:1,gres:gpu:2" + forged }, Reject, "more than one"},
		{"nodelist", func(j *Job) { j.ReqNodes = "node[01" + forged }, Reject, "--nodelist"},
		{"exclude", func(j *Job) { j.ExcNodes = "node]" + forged }, Reject, "--exclude"},
		{"bad host name", func(j *Job) { j.ReqNodes = "gpu" + forged }, Reject, "bad character"},
		{"node outside the topology", func(j *Job) { j.ReqNodes = "gpu99" }, Modify, "not in the cluster file"},
		{"partition outside the topology", func(j *Job) { j.Partition = "p" + forged }, Modify, "not in the cluster file"},
		{"inconsistent shape", func(j *Job) { j.TresPerJob, j.TresPerNode, j.MinNodes = "gres:gpu:8", "gres:gpu:3", 2 }, Reject, "GPUs per node"},
		{"never fits", func(j *Job) { j.TresPerJob, j.GangTopology = "gres:gpu:h100:64", "node" }, Reject, "can never fit"},
		{"tier the cluster lacks", func(j *Job) { j.GangTopology = "block" }, Reject, "has no block domains"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, s := decideFixture(t, nil, nil)
			j := base
			tc.edit(&j)
			res := decide(t, d, s, j)
			if res.Action != tc.action || !strings.Contains(res.Log, tc.want) {
				t.Fatalf("action %v, log %q; want action %v and a log with %q", res.Action, res.Log, tc.action, tc.want)
			}
			checkNoControl(t, tc.name, res)
		})
	}
}

// The same property for any job: whatever the user's strings hold, no
// line gangtopo hands to Slurm holds a control character.
func FuzzDecisionLinesHoldNoControlCharacters(f *testing.F) {
	f.Add("train\nx", "leaf,slice=1\nFAKE", "gres:gpu:8", "", "", "", "")
	f.Add("a", "leaf", "gres:gpu:h\x1b100:8", "gres:gpu:a\r:8", "node[01\n", "p\n", "gt_h100|gt_\n")
	f.Add("b", "nvlink:\x00", "gres:gpu:8", "gres:shard:\n3", "", "", "")
	f.Fuzz(func(t *testing.T, name, option, perJob, perNode, nodes, partition, features string) {
		if strings.Contains(nodes, "[") {
			t.Skip("ranges: a million names take a second to expand (hostlist has its own fuzz target)")
		}
		d, s := decideFixture(t, nil, nil)
		j := Job{UserID: 1, Name: name, GangTopology: option, TresPerJob: perJob, TresPerNode: perNode,
			ReqNodes: nodes, ExcNodes: nodes, Partition: partition, CPUsPerTres: perNode, MemPerTres: perJob,
			Features: features, Comment: features}
		checkNoControl(t, "fuzz", decide(t, d, s, j))
	})
}
