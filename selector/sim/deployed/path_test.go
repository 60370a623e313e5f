package deployed

import (
	"testing"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// lab is topotest.Lab16 (node01..node16, 8 GPUs and 64 CPUs each, leaves
// of 4 nodes) with the deployed path of jobs: all, and a snapshot where
// busy maps node names to GPUs in use (one CPU each).
func lab(t *testing.T, busy map[string]int) (*Path, *occupancy.Snapshot) {
	t.Helper()
	c := topotest.Lab16()
	pol := jobsubmit.DefaultPolicy()
	pol.Jobs = jobsubmit.ScopeAll
	p, err := New(c, Config{Policy: pol, Slurm: stockslurm.Options{Tree: true, NoCores: true}})
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(c)
	for name, k := range busy {
		take(t, s, name, k)
	}
	return p, s
}

func take(t *testing.T, s *occupancy.Snapshot, name string, k int) {
	t.Helper()
	id, _ := s.Cluster.NodeByName(name)
	var gpus []int
	for _, g := range freeGPUs(s, id)[:k] {
		gpus = append(gpus, g)
	}
	if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, GPUs: gpus, Milli: 1000, CPUMilli: int32(k * 1000)}}}); err != nil {
		t.Fatal(err)
	}
}

func freeGPUs(s *occupancy.Snapshot, n topology.NodeID) []int {
	var out []int
	for i, f := range s.NodeFree(n) {
		if f == occupancy.WholeGPU {
			out = append(out, i)
		}
	}
	return out
}

// submitStart runs a request through the deployed path: the job sbatch
// sends, the plugin's rewrite on sub, Slurm's start on run.
func submitStart(t *testing.T, p *Path, sub, run *occupancy.Snapshot, r request.Request) (string, occupancy.Allocation, bool) {
	t.Helper()
	j, err := SbatchJob(&r, jobsubmit.DefaultFeaturePrefix)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Submit(sub, j)
	if err != nil {
		t.Fatal(err)
	}
	a, ok, err := p.Start(run, res.Apply(j), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Decision.String(), a, ok
}

func nodesOf(c *topology.Cluster, a occupancy.Allocation) []string {
	var out []string
	for _, na := range a.Nodes {
		out = append(out, c.Nodes[na.Node].Name)
	}
	return out
}

func TestPathCarriesOutTheDecision(t *testing.T) {
	// node01, 03, 04 full, node02 6 of 8: a 1-GPU job fills node02's hole
	// (stock Slurm alone takes the lightest node of the tightest leaf).
	busy := map[string]int{"node01": 8, "node02": 6, "node03": 8, "node04": 8}
	p, s := lab(t, busy)
	one := request.Request{JobID: "one", GPUs: 1, Nodes: 1, CPUMilli: 1000}
	dec, a, ok := submitStart(t, p, s, s, one)
	if !ok || nodesOf(s.Cluster, a)[0] != "node02" {
		t.Fatalf("1 GPU went to %v (started %v); decision %s", nodesOf(s.Cluster, a), ok, dec)
	}

	// Decided on this state, started after node02 filled up: Slurm takes
	// the next node of the ranking, not any node.
	later := s.Clone()
	take(t, later, "node02", 2)
	_, a, ok = submitStart(t, p, s, later, one)
	if !ok || nodesOf(s.Cluster, a)[0] == "node02" {
		t.Fatalf("after node02 filled: %v (started %v)", nodesOf(s.Cluster, a), ok)
	}

	// node01 and node05 busy: leaves 1 and 2 are broken, the 32-GPU gang
	// goes to leaf3 (node09-12) as 4 x 8.
	p, s = lab(t, map[string]int{"node01": 8, "node05": 8})
	gang := request.Request{JobID: "gang", GPUs: 32, Tier: topology.TierLeaf, CPUMilli: 32000}
	dec, a, ok = submitStart(t, p, s, s, gang)
	want := []string{"node09", "node10", "node11", "node12"}
	if got := nodesOf(s.Cluster, a); !ok || len(got) != 4 || got[0] != want[0] || got[3] != want[3] {
		t.Errorf("gang on %v (started %v), want %v; decision %s", got, ok, want, dec)
	}

	// jobs: all: a CPU-only job in the gpu partition is placed too.
	cpu := request.Request{JobID: "cpu", CPUMilli: 4000, Nodes: 1, Partitions: []string{"gpu"}}
	dec, a, ok = submitStart(t, p, s, s, cpu)
	if !ok || len(a.Nodes) != 1 || len(a.Nodes[0].GPUs) != 0 {
		t.Errorf("CPU-only job: %+v (started %v); decision %s", a, ok, dec)
	}
}

// The controller's model: a decision gone stale is found and replaced.
func TestQueueRebindsStaleDecisions(t *testing.T) {
	c := topotest.Lab16()
	pol := jobsubmit.DefaultPolicy()
	pol.BindNodes = 1
	q, err := NewQueue(c, Config{Policy: pol, Slurm: stockslurm.Options{Tree: true, NoCores: true}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	s := occupancy.New(c)
	for _, n := range []string{"node01", "node03", "node04"} {
		take(t, s, n, 8)
	}
	take(t, s, "node02", 7)
	r := &request.Request{JobID: "j", GPUs: 1, Nodes: 1, CPUMilli: 1000, Tier: topology.TierNode}
	q.Submit(s, r) // bound to node02 alone
	take(t, s, "node02", 1)
	if _, ok := q.Place(s, r); ok {
		t.Fatal("started although its only node is full")
	}
	if !q.Stale(s, r) {
		t.Fatal("not stale, though a new decision would start it")
	}
	work := s.Clone()
	if !q.Rebind(work, r) {
		t.Fatal("Rebind changed nothing")
	}
	if q.Rebind(work, r) {
		t.Error("re-bound twice: the first re-binding holds its place on the working copy, where the job now fits its binding")
	}
	if a, ok := q.Place(s, r); !ok || c.Nodes[a.Nodes[0].Node].Name == "node02" {
		t.Errorf("after rebinding: %v, started %v", nodesOf(c, a), ok)
	}
}
