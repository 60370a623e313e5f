package queue

import (
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// Team a owns node01, team b node02 (8 GPUs each). a submits two 8-GPU
// jobs of 100 s at once; b submits one 1-GPU job at 150 s and one of 16
// GPUs, which fits no partition. Partitioned, a's second job waits 100 s
// while node02 idles; shared, it starts at once on node02.
func TestReplayPartitioned(t *testing.T) {
	spec := topotest.FatTreeSpec("two", 0, 1, 2, topotest.DGXH100)
	c := topotest.MustBuild(spec)
	part := func(node string) Partition {
		return Partition{Account: map[string]string{"node1": "a", "node2": "b"}[node],
			Cluster: topotest.MustBuild(spec.Subset("part-"+node, func(n string) bool { return n == node }))}
	}
	parts := []Partition{part("node1"), part("node2")}
	jobs := []Job{
		{Name: "a1", Submit: 0, Duration: 100, GPUs: 8, Account: "a"},
		{Name: "a2", Submit: 0, Duration: 100, GPUs: 8, Account: "a"},
		{Name: "big", Submit: 10, Duration: 100, GPUs: 16, Account: "b"},
		{Name: "b1", Submit: 150, Duration: 10, GPUs: 1, Account: "B"}, // account names ignore case
	}
	cfg := Config{Slowdown: NoSlowdown(), CPUsPerGPU: 1, RecordUse: true,
		Quota: &Quota{Shares: quota.Shares{{Account: "a", GPUs: 8}, {Account: "b", GPUs: 8}}}}
	slurm := func(c *topology.Cluster) Policy { return stockslurm.NewTree(c) }
	res, err := ReplayPartitioned(c, "static", jobs, parts, slurm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	starts := []float64{res.Outcomes[0].Start, res.Outcomes[1].Start, res.Outcomes[3].Start}
	if starts[0] != 0 || starts[1] != 100 || starts[2] != 150 || !res.Outcomes[2].Rejected {
		t.Errorf("starts %v, big rejected %v; want [0 100 150], true", starts, res.Outcomes[2].Rejected)
	}
	// b1 ran on node2: node 0 of its partition, node 1 of the cluster
	if got := res.Outcomes[3].Used; len(got) != 1 || got[0] != (NodeGPUs{Node: 1, GPUs: 1}) {
		t.Errorf("b1 used %v, want [{1 1}] (node2 in the whole cluster's numbering)", got)
	}
	s := Summarize(res)
	// window 0..150 s: a2 waits 0-100 while node02's 8 GPUs idle: 8 x 100.
	if math.Abs(s.StrandedGPUHours*3600-800) > 1e-9 || s.Rejected != 1 || res.Policy != "static" || res.GPUs != 16 {
		t.Errorf("stranded %g GPU-s (want 800), rejected %d (want 1), policy %q, GPUs %d", s.StrandedGPUHours*3600, s.Rejected, res.Policy, res.GPUs)
	}
	// a's share is 8: a1 asked within it, a2 (8 more) beyond it.
	if !res.Outcomes[0].Owner || res.Outcomes[1].Owner {
		t.Errorf("owners: a1 %v, a2 %v; want true, false", res.Outcomes[0].Owner, res.Outcomes[1].Owner)
	}
	shared, err := Replay(c, jobs, stockslurm.NewTree(c), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if shared.Outcomes[1].Start != 0 || Summarize(shared).StrandedGPUHours != 0 {
		t.Errorf("shared: a2 starts at %g, stranded %g GPU-h; want 0, 0", shared.Outcomes[1].Start, Summarize(shared).StrandedGPUHours)
	}
}
