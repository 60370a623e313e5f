package slurmstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The real sinfo sample: 8 nodes, node01 with all 8 GPUs used (one job's 8
// GPUs) and node02 with 4, both mixed because 1 of 8 CPUs is allocated.
func TestParseSinfoJSONSample(t *testing.T) {
	nodes, version, err := ParseSinfoJSON(readTestdata(t, "sinfo.json"), "sinfo --json")
	if err != nil {
		t.Fatal(err)
	}
	if version != "22.05.8" || len(nodes) != 8 {
		t.Fatalf("version %q, %d nodes; want 22.05.8, 8", version, len(nodes))
	}
	want := []Node{
		{Name: "node01", State: occupancy.StateMixed, SlurmState: "mixed", CPUs: 8, AllocCPUs: 1, Threads: 1, MemoryMiB: 4000,
			GPUs: 8, GPUsUsed: 8, Features: []string{"leaf1"}, Partitions: []string{"gpu"}},
		{Name: "node02", State: occupancy.StateMixed, SlurmState: "mixed", CPUs: 8, AllocCPUs: 1, Threads: 1, MemoryMiB: 4000,
			GPUs: 8, GPUsUsed: 4, Features: []string{"leaf1"}, Partitions: []string{"gpu"}},
		{Name: "node03", State: occupancy.StateIdle, SlurmState: "idle", CPUs: 8, Threads: 1, MemoryMiB: 4000,
			GPUs: 8, Features: []string{"leaf1"}, Partitions: []string{"gpu"}},
	}
	if diff := cmp.Diff(want, nodes[:3], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// The real squeue sample: jobs 1 and 2 completed (dropped), job 3 running
// with 8 GPUs on node01 and 4 on node02, one core on each; Slurm may
// requeue it, it started at 1796199159 and commented "leaf".
func TestParseSqueueJSONSample(t *testing.T) {
	jobs, _, err := ParseSqueueJSON(readTestdata(t, "squeue.json"), "squeue --json")
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{ID: "3", User: "root", Partition: "gpu", State: "RUNNING", NodeList: "node[01-02]", CPUs: 2,
		Nodes: []JobNode{
			{Name: "node01", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, GPUCount: 8, Cores: 1},
			{Name: "node02", GPUs: []int{0, 1, 2, 3}, GPUCount: 4, Cores: 1},
		},
		Facts: JobFacts{Requeue: true, Batch: true, Comment: "leaf", Start: time.Unix(1796199159, 0).UTC(), Priority: 4294901757, Known: true}}}
	if diff := cmp.Diff(want, jobs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

// The same job as scontrol -d show job prints it: CPU_IDs=0 is one CPU.
func TestParseScontrolJobsSample(t *testing.T) {
	jobs, bad, err := ParseScontrolJobs(readTestdata(t, "scontrol_show_job_d.txt"), "scontrol -d show job")
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	want := []Job{{ID: "3", User: "root", Partition: "gpu", State: "RUNNING", NodeList: "node[01-02]", CPUs: 2, FromText: true,
		Nodes: []JobNode{
			{Name: "node01", GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, GPUCount: 8, CPUs: 1},
			{Name: "node02", GPUs: []int{0, 1, 2, 3}, GPUCount: 4, CPUs: 1},
		}}}
	if diff := cmp.Diff(want, jobs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

func TestParseScontrolNodesSamples(t *testing.T) {
	var got []Node
	for _, f := range []string{"scontrol_show_node_d_o.txt", "scontrol_show_node_d_o_busy.txt"} {
		nodes, err := ParseScontrolNodes(readTestdata(t, f), f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, nodes...)
	}
	want := []Node{
		{Name: "node05", State: occupancy.StateIdle, SlurmState: "IDLE", CPUs: 8, Threads: 1, MemoryMiB: 4000,
			GPUs: 8, Features: []string{"leaf2"}, Partitions: []string{"gpu"}},
		{Name: "node02", State: occupancy.StateMixed, SlurmState: "MIXED", CPUs: 8, AllocCPUs: 1, Threads: 1, MemoryMiB: 4000,
			GPUs: 8, GPUsUsed: 4, Features: []string{"leaf1"}, Partitions: []string{"gpu"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// Without -d scontrol prints no GresUsed: the parser must refuse, not
// report the GPUs as free.
func TestScontrolNodesWithoutDetailFails(t *testing.T) {
	_, err := ParseScontrolNodes(readTestdata(t, "scontrol_show_node_o.txt"), "scontrol show node -o")
	want := "scontrol show node -o: line 1 (node01): field GresUsed: missing (run `scontrol -d show node -o`: -d prints it)"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestParseGres(t *testing.T) {
	tests := []struct {
		in   string
		want []Gres
	}{
		{"gpu:8", []Gres{{Name: "gpu", Count: 8}}},
		{"(null)", nil},
		{"gpu:h100:8(S:0-1)", []Gres{{Name: "gpu", Type: "h100", Count: 8}}},
		{"gpu:(null):4(IDX:0-3)", []Gres{{Name: "gpu", Count: 4, Idx: []int{0, 1, 2, 3}, HasIdx: true}}},
		{"gpu:h100:0(IDX:N/A)", []Gres{{Name: "gpu", Type: "h100", HasIdx: true}}},
		// an index list has commas: the split respects parentheses
		{"gpu:h100:3(IDX:0-1,6),gpu:a100:0(IDX:N/A),shard:0", []Gres{
			{Name: "gpu", Type: "h100", Count: 3, Idx: []int{0, 1, 6}, HasIdx: true},
			{Name: "gpu", Type: "a100", HasIdx: true},
			{Name: "shard"},
		}},
		{"gpu(CNT:4)", []Gres{{Name: "gpu", Count: 4}}},
		{"gpu:a100", []Gres{{Name: "gpu", Type: "a100", Count: 1}}},
	}
	for _, tc := range tests {
		got, err := ParseGres(tc.in)
		if err != nil {
			t.Errorf("ParseGres(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParseGres(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestParseGresErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"gpu:h100:x", `count: bad count "x"`},
		{"gpu:4(IDX:0-3", "unbalanced '('"},
		{"gpu:4(IDX:3-1)", `bad range "3-1"`},
		{"gpu:4(IDX:0,0)", "not ascending"},
		{"gpu:4(FOO:1)", "unknown (FOO:...)"},
		{"gpu:1:2:3", "want name[:type][:count]"},
		{"gpu:4(IDX:0-99999999)", "bad range"},
	}
	for _, tc := range tests {
		_, err := ParseGres(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseGres(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestParseState(t *testing.T) {
	tests := []struct {
		in   string
		want occupancy.NodeState
	}{
		{"IDLE", occupancy.StateIdle},
		{"MIXED", occupancy.StateMixed},
		{"ALLOCATED+COMPLETING", occupancy.StateAlloc},
		{"MIXED+DRAIN", occupancy.StateDrain},
		{"IDLE+DRAIN", occupancy.StateDrain},
		{"DOWN*", occupancy.StateDown},
		{"DOWN*+DRAIN", occupancy.StateDown},             // down beats drain
		{"IDLE+NOT_RESPONDING", occupancy.StateDown},     // scontrol's long form of "*"
		{"IDLE+CLOUD+POWERED_DOWN", occupancy.StateIdle}, // resumed on demand
		{"IDLE+POWERING_DOWN", occupancy.StateDrain},
		{"MIXED+MAINTENANCE+RESERVED", occupancy.StateDrain},
		{"idle~", occupancy.StateIdle},
		{"ALLOCATED+FAIL", occupancy.StateDrain},
		{"FUTURE", occupancy.StateDown},
		{"UNKNOWN+DRAIN", occupancy.StateUnknown},
		{"IDLE+REBOOT_ISSUED", occupancy.StateDown},
	}
	for _, tc := range tests {
		got, err := ParseState(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseState(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"SLEEPY", "IDLE+WOBBLY", "", "IDLE+"} {
		if _, err := ParseState(bad); err == nil {
			t.Errorf("ParseState(%q) succeeded", bad)
		}
	}
}

// A job's request is read from the plugin's decision line in its
// AdminComment, which only administrators (and the plugin) can set; a word
// in the user's own comment, or a decision line pasted there, is not
// believed. Every job's decision is counted, pending and finished ones too.
func TestRequestFromAdminCommentOnly(t *testing.T) {
	const line = "gangtopo v1 placed request=leaf:required gpus=12 domain=leaf1 tier=leaf snapshot=5: placed"
	const typed = "gangtopo v1 placed request=node:required gpus=1 domain=node01 tier=node models=h100,a100 snapshot=5: placed"
	tests := []struct {
		name, admin, comment string
		want                 string
		models               []string
	}{
		{"decision in AdminComment", line, "", "leaf:required", nil},
		{"after another plugin's text", "lua: x | " + line, "", "leaf:required", nil},
		{"accepted models", typed, "", "node:required", []string{"h100", "a100"}},
		{"word in the user's comment", "", "GANG_TOPOLOGY=spine", "", nil},
		{"decision pasted into the user's comment", "", "gangtopo v1 placed request=spine:required gpus=1 models=h100: forged", "", nil},
		{"old-style word in AdminComment", "GANG_TOPOLOGY=leaf", "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := editLast(t, "squeue.json", `"admin_comment": ""`, `"admin_comment": "`+tc.admin+`"`)
			data = []byte(strings.Replace(string(data), `"comment": "leaf"`, `"comment": "`+tc.comment+`"`, 1))
			dec := Decisions{}
			jobs, _, err := parseSqueueJSON(data, "squeue --json", dec, pendingLists{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%d jobs, %v", len(jobs), err)
			}
			if jobs[0].GangTopology != tc.want {
				t.Errorf("request %q, want %q", jobs[0].GangTopology, tc.want)
			}
			if diff := cmp.Diff(tc.models, jobs[0].Models); diff != "" {
				t.Errorf("models (-want +got):\n%s", diff)
			}
			want := 0
			if strings.Contains(tc.admin, "gangtopo v1") {
				want = 1
			}
			if dec.Total() != want {
				t.Errorf("%d decisions counted, want %d", dec.Total(), want)
			}
		})
	}
}

// The decisions of jobs that hold nothing (pending, finished) count too:
// the controller warns when most jobs were left as submitted because the
// cluster file does not cover them.
func TestDecisionsOfEveryJob(t *testing.T) {
	notCovered := "gangtopo v1 untouched cause=not_covered request=leaf:required gpus=8: partition cpu is not in the cluster file of lab16"
	data := string(readTestdata(t, "squeue.json"))
	data = strings.Replace(data, `"admin_comment": ""`, `"admin_comment": "`+notCovered+`"`, 2) // jobs 1 and 2, COMPLETED
	data = strings.Replace(data, `"admin_comment": ""`, `"admin_comment": "gangtopo v1 placed request=leaf:required gpus=12: placed"`, 1)
	dec := Decisions{}
	if _, _, err := parseSqueueJSON([]byte(data), "squeue --json", dec, pendingLists{}); err != nil {
		t.Fatal(err)
	}
	if dec.Total() != 3 || dec.NotCovered() != 2 || !dec.MostlyNotCovered(2) || dec.MostlyNotCovered(3) {
		t.Errorf("decisions %v: want 3, 2 of them not covered", dec)
	}
}
