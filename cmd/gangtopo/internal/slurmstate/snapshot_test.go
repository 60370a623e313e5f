package slurmstate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

var testTime = time.Date(2026, 12, 2, 8, 12, 40, 0, time.UTC)

func lab8(t testing.TB) *topology.Cluster {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "lab8.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := topology.Parse(f, "lab8.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stateFromJSON parses a sinfo/squeue pair of testdata files.
func stateFromJSON(t testing.TB, sinfo, squeue string) *State {
	t.Helper()
	nodes, v, err := ParseSinfoJSON(readTestdata(t, sinfo), sinfo)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := ParseSqueueJSON(readTestdata(t, squeue), squeue)
	if err != nil {
		t.Fatal(err)
	}
	return &State{Nodes: nodes, Jobs: jobs, Version: v}
}

func stateFromScontrol(t testing.TB, nodesFile, jobsFile string) *State {
	t.Helper()
	nodes, err := ParseScontrolNodes(readTestdata(t, nodesFile), nodesFile)
	if err != nil {
		t.Fatal(err)
	}
	jobs, bad, err := ParseScontrolJobs(readTestdata(t, jobsFile), jobsFile)
	if err != nil {
		t.Fatal(err)
	}
	return &State{Nodes: nodes, Jobs: jobs, Unreadable: bad}
}

func encode(t testing.TB, s *occupancy.Snapshot) []byte {
	t.Helper()
	s.Generation = 1
	var buf bytes.Buffer
	if err := s.Encode(&buf, "slurm"); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkGolden compares got with testdata/golden/name, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	golden.Check(t, path, got)
}

func mustNode(t testing.TB, c *topology.Cluster, name string) topology.NodeID {
	t.Helper()
	id, ok := c.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return id
}

// The real samples on the lab they came from: job 3 holds all of node01's
// GPUs and node02's 0-3, one CPU on each; nothing disagrees.
func TestBuildSnapshotSamples(t *testing.T) {
	c := lab8(t)
	s, rep, err := BuildSnapshot(c, stateFromJSON(t, "sinfo.json", "squeue.json"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %v", rep.Lines())
	}
	n1, n2 := mustNode(t, c, "node01"), mustNode(t, c, "node02")
	if diff := cmp.Diff([]uint16{0, 0, 0, 0, 0, 0, 0, 0}, s.NodeFree(n1)); diff != "" {
		t.Errorf("node01 GPUs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint16{0, 0, 0, 0, 1000, 1000, 1000, 1000}, s.NodeFree(n2)); diff != "" {
		t.Errorf("node02 GPUs (-want +got):\n%s", diff)
	}
	// 8 CPUs, 1 allocated
	if s.FreeCPUMilli[n1] != 7000 || s.State[n1] != occupancy.StateMixed {
		t.Errorf("node01: %d milli-CPUs free, state %v; want 7000, mixed", s.FreeCPUMilli[n1], s.State[n1])
	}
	checkGolden(t, "samples.json", encode(t, s))

	// scontrol -d show job describes the same job: the same snapshot.
	st := stateFromJSON(t, "sinfo.json", "squeue.json")
	st.Jobs, st.Unreadable, err = ParseScontrolJobs(readTestdata(t, "scontrol_show_job_d.txt"), "scontrol")
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := BuildSnapshot(c, st, testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(encode(t, s)), string(encode(t, s2))); diff != "" {
		t.Errorf("squeue vs scontrol jobs (-want +got):\n%s", diff)
	}
}

// The hand-made fixtures exercise drain/down/cloud states, typed GRES with
// indices, a completing job and a node the topology lacks; the JSON and the
// scontrol versions describe the same cluster and must agree.
func TestBuildSnapshotHandmade(t *testing.T) {
	c := lab8(t)
	fromJSON, rep, err := BuildSnapshot(c, stateFromJSON(t, "sinfo_handmade.json", "squeue_handmade.json"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	fromText, rep2, err := BuildSnapshot(c, stateFromScontrol(t, "scontrol_nodes_handmade.txt", "scontrol_jobs_handmade.txt"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	got := encode(t, fromJSON)
	checkGolden(t, "handmade.json", got)
	if diff := cmp.Diff(string(got), string(encode(t, fromText))); diff != "" {
		t.Errorf("sinfo/squeue vs scontrol (-want +got):\n%s", diff)
	}
	// lab8 calls the model h100, as Slurm's typed GRES does: only node09 differs.
	want := []string{"node in Slurm but not in the topology on 1 node: node09"}
	for _, r := range []Report{rep, rep2} {
		if diff := cmp.Diff(want, r.Lines()); diff != "" {
			t.Errorf("report (-want +got):\n%s", diff)
		}
	}
	states := map[string]occupancy.NodeState{"node01": occupancy.StateMixed, "node02": occupancy.StateDrain,
		"node03": occupancy.StateDrain, "node04": occupancy.StateDown, "node05": occupancy.StateIdle, "node06": occupancy.StateAlloc}
	for name, st := range states {
		if got := fromJSON.State[mustNode(t, c, name)]; got != st {
			t.Errorf("%s: state %v, want %v", name, got, st)
		}
	}
}

// Cases built in code: what the builder does when the sources disagree.
func TestBuildSnapshotReconciles(t *testing.T) {
	c := lab8(t)
	node := func(mod func(*Node)) Node {
		n := Node{Name: "node01", State: occupancy.StateMixed, CPUs: 8, Threads: 1, MemoryMiB: 4000, GPUs: 8}
		mod(&n)
		return n
	}
	tests := []struct {
		name    string
		node    Node
		jobs    []JobNode
		wantGPU []uint16
		wantCPU int32 // free milli-CPUs
		wantRep []string
	}{
		{"job started after the node listing: union of both",
			node(func(n *Node) { n.UsedIdxKnown = true }),
			[]JobNode{{Name: "node01", GPUs: []int{2, 3}, Cores: 2}},
			[]uint16{1000, 1000, 0, 0, 1000, 1000, 1000, 1000}, 6000, nil},
		{"node lists indices a finished job no longer shows",
			node(func(n *Node) { n.GPUsUsed, n.GPUUsedIdx, n.UsedIdxKnown, n.AllocCPUs = 3, []int{0, 1, 2}, true, 3 }),
			[]JobNode{{Name: "node01", GPUs: []int{0}, Cores: 1}},
			[]uint16{0, 0, 0, 1000, 1000, 1000, 1000, 1000}, 5000, nil},
		{"untyped GRES without indices: lowest GPUs marked busy, reported",
			node(func(n *Node) { n.GPUsUsed = 2 }),
			nil,
			[]uint16{0, 0, 1000, 1000, 1000, 1000, 1000, 1000}, 8000,
			[]string{"GPUs in use that no job accounts for (Slurm printed no GPU indices; the lowest 2 marked busy) on 1 node: node01"}},
		{"Slurm has 4 GPUs, the topology 8: 4-7 never handed out",
			node(func(n *Node) { n.GPUs = 4 }),
			nil,
			[]uint16{1000, 1000, 1000, 1000, 0, 0, 0, 0}, 8000,
			[]string{"GPU count differs (Slurm 4, topology 8) on 1 node: node01"}},
		{"a shard of 4 on GPU 3 takes a quarter; 2 cores x 2 threads",
			node(func(n *Node) { n.ShardsPerGPU, n.Threads = 4, 2 }),
			[]JobNode{{Name: "node01", Shards: map[int]int{3: 1}, Cores: 2}},
			[]uint16{1000, 1000, 1000, 750, 1000, 1000, 1000, 1000}, 4000, nil},
		{"Slurm has 4 CPUs, the topology 8: the smaller counts",
			node(func(n *Node) { n.CPUs, n.AllocCPUs = 4, 1 }),
			nil,
			[]uint16{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 3000,
			[]string{"CPU count differs (Slurm 4, topology 8) on 1 node: node01"}},
		{"a job on an index the topology lacks",
			node(func(*Node) {}),
			[]JobNode{{Name: "node01", GPUs: []int{9}}},
			[]uint16{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, 8000,
			[]string{"job outside the topology (a job holds GPU index 9, topology has 8 GPUs) on 1 node: node01"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Nodes: []Node{tc.node}}
			if tc.jobs != nil {
				st.Jobs = []Job{{ID: "7", State: "RUNNING", Nodes: tc.jobs}}
			}
			s, rep, err := BuildSnapshot(c, st, testTime, "")
			if err != nil {
				t.Fatal(err)
			}
			id := mustNode(t, c, "node01")
			if diff := cmp.Diff(tc.wantGPU, s.NodeFree(id)); diff != "" {
				t.Errorf("free GPUs (-want +got):\n%s", diff)
			}
			if s.FreeCPUMilli[id] != tc.wantCPU {
				t.Errorf("free CPU = %d milli, want %d", s.FreeCPUMilli[id], tc.wantCPU)
			}
			// the other 7 nodes are missing from this Slurm (kinds sort first)
			want := append([]string{"node in the topology but not in Slurm on 7 nodes: node[02-08]"}, tc.wantRep...)
			if diff := cmp.Diff(want, rep.Lines()); diff != "" {
				t.Errorf("report (-want +got):\n%s", diff)
			}
		})
	}
}

// The lab samples against the 16-node e2e topology: half the nodes are
// missing from Slurm and CPU/memory sizes differ; all of it is reported.
func TestBuildSnapshotAgainstWrongTopology(t *testing.T) {
	c := topotest.Lab16()
	s, rep, err := BuildSnapshot(c, stateFromJSON(t, "sinfo.json", "squeue.json"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"node in the topology but not in Slurm on 8 nodes: node[09-16]",
		"CPU count differs (Slurm 8, topology 64) on 8 nodes: node[01-08]",
		"memory differs (Slurm 4000 MiB, topology 1000000 MiB) on 8 nodes: node[01-08]",
	}
	if diff := cmp.Diff(want, rep.Lines()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if !rep.TopologyMismatch() {
		t.Error("TopologyMismatch() = false")
	}
	// capacity is Slurm's smaller one: 8 CPUs, 1 allocated
	if got := s.FreeCPUMilli[mustNode(t, c, "node01")]; got != 7000 {
		t.Errorf("node01 free CPU = %d milli, want 7000", got)
	}
	if got := s.State[mustNode(t, c, "node12")]; got != occupancy.StateUnknown {
		t.Errorf("node12 state = %v, want unknown", got)
	}
}

// Real output of the 16-node e2e lab (tests/slurmlab, typed GRES with
// device files) with five jobs: 1 and 3 (1 GPU each on node13), 4 (16 GPUs
// on node[01-02], GANG_TOPOLOGY=leaf in its comment), 5 (3 GPUs on node03),
// 2 cancelled and 6 pending; node15 down, node16 drained. The JSON and the
// text commands give the same snapshot.
func TestBuildSnapshotLab16(t *testing.T) {
	c := topotest.Lab16()
	fromJSON, rep, err := BuildSnapshot(c, stateFromJSON(t, "lab16_sinfo.json", "lab16_squeue.json"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %v", rep.Lines())
	}
	got := encode(t, fromJSON)
	checkGolden(t, "lab16.json", got)
	fromText, _, err := BuildSnapshot(c, stateFromScontrol(t, "lab16_scontrol_nodes.txt", "lab16_scontrol_jobs.txt"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(got), string(encode(t, fromText))); diff != "" {
		t.Errorf("sinfo/squeue vs scontrol (-want +got):\n%s", diff)
	}
	free := map[string][]uint16{
		"node01": {0, 0, 0, 0, 0, 0, 0, 0},
		"node03": {0, 0, 0, 1000, 1000, 1000, 1000, 1000},
		"node13": {0, 1000, 0, 1000, 1000, 1000, 1000, 1000},
	}
	for name, want := range free {
		if diff := cmp.Diff(want, fromJSON.NodeFree(mustNode(t, c, name))); diff != "" {
			t.Errorf("%s free GPUs (-want +got):\n%s", name, diff)
		}
	}
	var ids, requests []string
	for _, j := range fromJSON.Jobs {
		ids, requests = append(ids, j.ID), append(requests, j.Request)
	}
	if diff := cmp.Diff([]string{"1", "3", "4", "5"}, ids); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	// job 4's --comment=GANG_TOPOLOGY=leaf is the user's own text: no request
	if diff := cmp.Diff([]string{"", "", "", ""}, requests); diff != "" {
		t.Errorf("gang topology requests (-want +got):\n%s", diff)
	}
	if fromJSON.State[mustNode(t, c, "node15")] != occupancy.StateDown || fromJSON.State[mustNode(t, c, "node16")] != occupancy.StateDrain {
		t.Error("node15 should be down and node16 drained")
	}
}

// `scontrol -d show node` without -o reads like the one-line form. The
// multi-line capture was taken a few seconds later, after job 5 ended: only
// node03 differs.
func TestScontrolNodesMultiLine(t *testing.T) {
	one, err := ParseScontrolNodes(readTestdata(t, "lab16_scontrol_nodes.txt"), "one-line")
	if err != nil {
		t.Fatal(err)
	}
	multi, err := ParseScontrolNodes(readTestdata(t, "lab16_scontrol_nodes_multiline.txt"), "multi-line")
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 16 || len(multi) != 16 {
		t.Fatalf("%d and %d nodes, want 16", len(one), len(multi))
	}
	if multi[2].Name != "node03" || multi[2].State != occupancy.StateIdle || one[2].State != occupancy.StateMixed {
		t.Errorf("node03: %s then %s, want mixed then idle", one[2].SlurmState, multi[2].SlurmState)
	}
	one, multi = append(one[:2], one[3:]...), append(multi[:2], multi[3:]...)
	if diff := cmp.Diff(one, multi, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("nodes (-one-line +multi-line):\n%s", diff)
	}
}

// Real output of the 16-node demo lab (make demo) with two jobs whose
// users wrote Slurm-like lines into their free text: job 5017's comment
// ends in "\n   Nodes=node16 CPU_IDs=0-3 Mem=100 GRES=gpu:8(IDX:0-7)", job
// 5019's name in "\n     Nodes=node14 CPU_IDs=0-7 Mem=100 ..." (node14's
// GPUs are all held by job 16, the demo's 24-GPU gang). Both really hold
// one GPU on node03. squeue --json escapes the text; scontrol's text does
// not, so its jobs count only where the nodes confirm them: node16 stays
// free, both jobs are left out and reported, and the capacity equals the
// JSON snapshot's.
func TestScontrolTextCannotForgeJobs(t *testing.T) {
	c := topotest.Lab16()
	fromJSON, rep, err := BuildSnapshot(c, stateFromJSON(t, "lab16_forged_sinfo.json", "lab16_forged_squeue.json"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("JSON problems: %v", rep.Lines())
	}
	fromText, rep, err := BuildSnapshot(c, stateFromScontrol(t, "lab16_forged_scontrol_nodes.txt", "lab16_forged_scontrol_jobs.txt"), testTime, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*occupancy.Snapshot{fromJSON, fromText} {
		if diff := cmp.Diff([]uint16{1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, s.NodeFree(mustNode(t, c, "node16"))); diff != "" {
			t.Errorf("node16 GPUs (-want +got):\n%s", diff)
		}
	}
	for i := range c.Nodes {
		id := topology.NodeID(i)
		if !cmp.Equal(fromJSON.NodeFree(id), fromText.NodeFree(id)) || fromJSON.FreeCPUMilli[id] != fromText.FreeCPUMilli[id] ||
			fromJSON.FreeMemMiB[id] != fromText.FreeMemMiB[id] {
			t.Errorf("%s: JSON and text capacity differ", c.Nodes[i].Name)
		}
	}
	want := []string{
		"job left out: scontrol's text claims what the node does not show (job 5017 claims GPUs [0 1 2 3 4 5 6 7], in use there: []) on 1 node: node16",
		"job left out: scontrol's text claims what the node does not show (job 5019 claims 100 MiB, 0 MiB allocated there) on 1 node: node14",
	}
	if diff := cmp.Diff(want, rep.Lines()); diff != "" {
		t.Errorf("text report (-want +got):\n%s", diff)
	}
	ids := func(s *occupancy.Snapshot) []string {
		var out []string
		for _, j := range s.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(fromJSON); !slices.Contains(got, "5017") || !slices.Contains(got, "5019") {
		t.Errorf("JSON jobs %v lack 5017 or 5019", got)
	}
	if got := ids(fromText); slices.Contains(got, "5017") || slices.Contains(got, "5019") || len(got) != len(ids(fromJSON))-2 {
		t.Errorf("text jobs %v: want the JSON ones %v less 5017 and 5019", got, ids(fromJSON))
	}
}
