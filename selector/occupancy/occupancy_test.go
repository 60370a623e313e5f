package occupancy_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

func node(t *testing.T, c *topology.Cluster, name string) topology.NodeID {
	t.Helper()
	id, ok := c.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return id
}

func TestAllocateRelease(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	n1 := node(t, c, "node01")
	a := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n1, GPUs: []int{0, 1}, Milli: 1000, CPUMilli: 2000}}}
	if err := s.Allocate(a); err != nil {
		t.Fatal(err)
	}
	// 8 GPUs, 2 taken: 6 whole free, node mixed.
	if got := s.WholeFree(n1); got != 6 {
		t.Errorf("WholeFree = %d, want 6", got)
	}
	if s.State[n1] != occupancy.StateMixed {
		t.Errorf("state = %v, want mixed", s.State[n1])
	}
	// A share on GPU 2 leaves 600 milli there; the node has 5 whole GPUs.
	share := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n1, GPUs: []int{2}, Milli: 400}}}
	if err := s.Allocate(share); err != nil {
		t.Fatal(err)
	}
	if got := s.NodeFree(n1)[2]; got != 600 {
		t.Errorf("GPU 2 free = %d, want 600", got)
	}
	// GPU 0 is taken: the whole allocation must fail and change nothing.
	bad := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{
		{Node: node(t, c, "node02"), GPUs: []int{0}, Milli: 1000},
		{Node: n1, GPUs: []int{0}, Milli: 1000},
	}}
	if err := s.Allocate(bad); err == nil || !strings.Contains(err.Error(), "node01: GPU 0 has 0 milli free") {
		t.Errorf("Allocate(bad) = %v", err)
	}
	if s.WholeFree(node(t, c, "node02")) != 8 {
		t.Error("failed Allocate changed node02")
	}
	for _, x := range []occupancy.Allocation{a, share} {
		if err := s.Release(x); err != nil {
			t.Fatal(err)
		}
	}
	if s.State[n1] != occupancy.StateIdle || s.WholeFree(n1) != 8 {
		t.Errorf("after release: state %v, whole free %d", s.State[n1], s.WholeFree(n1))
	}
	if err := s.Release(a); err == nil {
		t.Error("double release succeeded")
	}
}

func TestNodeSigIgnoresGPUOrder(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	a, b := node(t, c, "node01"), node(t, c, "node02")
	// 2 GPUs busy on each, at different indices: same usefulness.
	s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: a, GPUs: []int{0, 1}, Milli: 1000}, {Node: b, GPUs: []int{3, 6}, Milli: 1000}}})
	if s.NodeSig(a) != s.NodeSig(b) {
		t.Error("same free multiset, different signatures")
	}
	s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: b, GPUs: []int{7}, Milli: 500}}})
	if s.NodeSig(a) == s.NodeSig(b) {
		t.Error("different free multisets, same signature")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	s.Generation = 7
	if err := s.AddJob(occupancy.Job{ID: "42", User: "alice", Request: "leaf", Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{
		{Node: node(t, c, "node05"), GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}, Milli: 1000, CPUMilli: 8000},
		{Node: node(t, c, "node06"), GPUs: []int{2}, Milli: 250, CPUMilli: 1000, MemMiB: 1024},
	}}}); err != nil {
		t.Fatal(err)
	}
	s.SetState(node(t, c, "node16"), occupancy.StateDrain)
	var buf bytes.Buffer
	if err := s.Encode(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	got, err := occupancy.Decode(&buf, "snap.json", c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.FreeMilli, got.FreeMilli); diff != "" {
		t.Errorf("FreeMilli (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.State, got.State); diff != "" {
		t.Errorf("State (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.Jobs, got.Jobs); diff != "" {
		t.Errorf("Jobs (-want +got):\n%s", diff)
	}
	if got.Generation != 7 || got.NodeSig(node(t, c, "node06")) != s.NodeSig(node(t, c, "node06")) {
		t.Error("generation or signatures differ after round trip")
	}
	if got.Features != nil {
		t.Errorf("features %v from a snapshot that reports none", got.Features)
	}
}

// Node features survive a round trip; a snapshot that lists them for some
// nodes reports the others as carrying none, not as unknown.
func TestJSONFeatures(t *testing.T) {
	c := topotest.Lab16()
	s := occupancy.New(c)
	s.Features = make([][]string, len(c.Nodes))
	s.Features[node(t, c, "node01")] = []string{"gt_leaf1", "gt_node01"}
	var buf bytes.Buffer
	if err := s.Encode(&buf, "test"); err != nil {
		t.Fatal(err)
	}
	got, err := occupancy.Decode(&buf, "snap.json", c)
	if err != nil {
		t.Fatal(err)
	}
	if has, ok := got.HasFeature(node(t, c, "node01"), "gt_node01"); !has || !ok {
		t.Errorf("node01 gt_node01: has %v, known %v", has, ok)
	}
	if has, ok := got.HasFeature(node(t, c, "node02"), "gt_leaf1"); has || !ok {
		t.Errorf("node02 gt_leaf1: has %v, known %v; want false, true", has, ok)
	}
	doc := `{"version":"v1","cluster":"lab16","generation":1,"time":"2026-12-01T00:00:00Z",
 "nodes":[{"name":"node01","state":"idle","features":["gt_leaf1"]},{"name":"node02","state":"idle"}]}`
	partial, err := occupancy.Decode(strings.NewReader(doc), "s.json", c)
	if err != nil {
		t.Fatal(err)
	}
	if has, ok := partial.HasFeature(node(t, c, "node02"), "gt_leaf1"); has || !ok {
		t.Errorf("node02 of a partial list: has %v, known %v; want false, true", has, ok)
	}
}

// A hand-written snapshot may list only jobs: the free GPUs, CPUs and memory
// are derived from them.
func TestDecodeDerivesFromJobs(t *testing.T) {
	c := topotest.Lab16()
	doc := `{"version":"v1","cluster":"lab16","generation":1,"time":"2026-12-01T00:00:00Z",
 "nodes":[{"name":"node01","state":"mixed"},{"name":"node02","state":"idle"}],
 "jobs":[{"id":"1","nodes":{"node01":{"gpus":[1,3],"cpus":4}}}]}`
	s, err := occupancy.Decode(strings.NewReader(doc), "s.json", c)
	if err != nil {
		t.Fatal(err)
	}
	n1 := node(t, c, "node01")
	if diff := cmp.Diff([]uint16{1000, 0, 1000, 0, 1000, 1000, 1000, 1000}, s.NodeFree(n1)); diff != "" {
		t.Errorf("node01 free (-want +got):\n%s", diff)
	}
	if s.FreeCPUMilli[n1] != 60000 {
		t.Errorf("node01 free CPUs = %d milli, want 60000", s.FreeCPUMilli[n1])
	}
	if s.State[node(t, c, "node03")] != occupancy.StateUnknown || s.Missing() != "node[03-16]" {
		t.Errorf("missing nodes = %q", s.Missing())
	}
}

func TestDecodeErrors(t *testing.T) {
	c := topotest.Lab16()
	head := `{"version":"v1","cluster":"lab16","generation":1,"time":"2026-12-01T00:00:00Z",`
	tests := []struct{ name, doc, want string }{
		{"unknown key", head + `"nodes":[],"colour":1}`, `unknown field "colour"`},
		{"wrong version", `{"version":"v2","cluster":"lab16","nodes":[]}`, `version "v2" is not supported`},
		{"wrong cluster", `{"version":"v1","cluster":"other","nodes":[]}`, `snapshot is of cluster "other", topology is of "lab16"`},
		{"another cluster file", `{"version":"v1","cluster":"lab16","topology_hash":"sha256:0123","nodes":[]}`,
			"snapshot was made against the cluster file with hash sha256:0123 (the controller daemon's --topology), but the cluster file loaded here has hash " + c.Hash + ": the two copies differ; copy the controller's cluster file over this one"},
		{"unknown node", head + `"nodes":[{"name":"node99","state":"idle"}]}`, `nodes[0]: unknown node "node99"`},
		{"duplicate node", head + `"nodes":[{"name":"node01","state":"idle"},{"name":"node01","state":"idle"}]}`, `node node01 listed twice`},
		{"bad state", head + `"nodes":[{"name":"node01","state":"sleepy"}]}`, `unknown node state "sleepy"`},
		{"short gpu list", head + `"nodes":[{"name":"node01","state":"idle","gpu_free_milli":[1000]}]}`, `gpu_free_milli has 1 entries, the node has 8 GPUs`},
		{"share out of range", head + `"nodes":[{"name":"node01","state":"idle","gpu_free_milli":[1000,1000,1000,1000,1000,1000,1000,1001]}]}`, `gpu_free_milli[7] = 1001 out of range`},
		{"gpu index out of range", head + `"nodes":[{"name":"node01","state":"mixed"}],"jobs":[{"id":"3","nodes":{"node01":{"gpus":[8]}}}]}`, `jobs[0] (id "3"): node node01: GPU index 8 out of range 0..7`},
		{"over-committed", head + `"nodes":[{"name":"node01","state":"mixed"}],"jobs":[{"id":"3","nodes":{"node01":{"gpus":[0]}}},{"id":"4","nodes":{"node01":{"gpus":[0]}}}]}`, `GPU 0 is over-committed`},
		{"type error", head + `"nodes":[{"name":"node01","state":"idle","free_cpus":"many"}]}`, `line 1: field nodes.free_cpus: want float64, got string`},
		{"syntax error", head + "\n" + `"nodes":[}`, `line 2:`},
		{"trailing data", head + `"nodes":[]} {}`, `trailing data`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := occupancy.Decode(strings.NewReader(tc.doc), "snap.json", c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode error = %v, want it to contain %q", err, tc.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "snap.json") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	c := topotest.Lab16()
	f.Add([]byte(`{"version":"v1","cluster":"lab16","nodes":[{"name":"node01","state":"mixed"}],"jobs":[{"id":"1","nodes":{"node01":{"gpus":[1,3],"milli":500}}}]}`))
	f.Add([]byte(`{"version":"v1","cluster":"lab16","nodes":[{"name":"node02","state":"idle","gpu_free_milli":[0,0,0,0,1000,1000,500,0],"free_cpus":3.5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := occupancy.Decode(bytes.NewReader(data), "fuzz.json", c)
		if err != nil {
			return
		}
		for g, m := range s.FreeMilli {
			if m > occupancy.WholeGPU {
				t.Fatalf("GPU %d free %d > whole", g, m)
			}
		}
		// What decodes must encode and decode to the same free capacity.
		var buf bytes.Buffer
		if err := s.Encode(&buf, "fuzz"); err != nil {
			t.Fatal(err)
		}
		back, err := occupancy.Decode(&buf, "again.json", c)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(s.FreeMilli, back.FreeMilli); diff != "" {
			t.Fatalf("round trip changed FreeMilli:\n%s", diff)
		}
	})
}

// BenchmarkDecode4096: reading a 4,096-node snapshot (what the Slurm plugin
// does once per generation, outside the placement call).
func BenchmarkDecode4096(b *testing.B) {
	c := topotest.FatTree(4, 16, 64, topotest.DGXH100)
	s := occupancy.New(c)
	var buf bytes.Buffer
	if err := s.Encode(&buf, "bench"); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := occupancy.Decode(bytes.NewReader(data), "bench.json", c); err != nil {
			b.Fatal(err)
		}
	}
}
