package queue

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// Lab16 (four leaves of four 8-GPU nodes), first fit. Job 0 (16 GPUs) runs
// on node01-02 from 0; node02 fails at 100 and is repaired at 600. Job 0
// is requeued and may start again at 100+121: first fit takes node01 and
// node03, still leaf1. Job 1 (all 128 GPUs, submitted at 150) waits for
// the repair, then for job 0.
func TestFailureRequeues(t *testing.T) {
	c := topotest.Lab16()
	node02, _ := c.NodeByName("node02")
	jobs := []Job{{Name: "gang", Submit: 0, Duration: 1000, GPUs: 16}, {Name: "all", Submit: 150, Duration: 10, GPUs: 128}}
	cfg := Config{Slowdown: NoSlowdown(),
		Failures: &Failures{Events: []NodeFailure{{At: 100, Node: node02}}, Repair: 500}}
	res, err := Replay(c, jobs, firstFit{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []Restart{{Job: 0, At: 100, Start: 221, Old: topology.TierLeaf, New: topology.TierLeaf, SameDomain: true}}
	if diff := cmp.Diff(want, res.Restarts); diff != "" {
		t.Errorf("restarts (-want +got):\n%s", diff)
	}
	o := res.Outcomes[0]
	if o.Failures != 1 || o.Ran != 100 || o.End != 1221 || res.Failures != 1 {
		t.Errorf("job 0: failures %d, ran %v, end %v; replay failures %d", o.Failures, o.Ran, o.End, res.Failures)
	}
	// job 1 needs every node: node02 is back at 600, job 0 ends at 1221
	if got := res.Outcomes[1].Start; got != 1221 {
		t.Errorf("job 1 started at %v, want 1221", got)
	}
}

// A failure on a node nobody uses requeues nothing; one on a node already
// down is dropped; the one whole-cluster job waits for the repair.
func TestFailureIdleNode(t *testing.T) {
	c := topotest.Lab16()
	n5, _ := c.NodeByName("node05")
	jobs := []Job{{Name: "all", Submit: 50, Duration: 10, GPUs: 128}}
	cfg := Config{Failures: &Failures{Events: []NodeFailure{{At: 10, Node: n5}, {At: 20, Node: n5}}, Repair: 300}}
	res, err := Replay(c, jobs, firstFit{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Restarts) != 0 || res.Failures != 1 || res.Outcomes[0].Start != 310 {
		t.Errorf("restarts %v, failures %d, start %v; want none, 1, 310", res.Restarts, res.Failures, res.Outcomes[0].Start)
	}
}

func TestDrawFailures(t *testing.T) {
	c := topotest.Lab16()
	// 16 nodes at 0.01 failures per node-hour over 1,000 hours: 160
	// expected
	ev := DrawFailures(c, 0.01, 1000*3600, 1)
	if len(ev) < 120 || len(ev) > 200 {
		t.Errorf("%d failures drawn, want about 160", len(ev))
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].At < ev[i-1].At || int(ev[i].Node) >= len(c.Nodes) {
			t.Fatalf("event %d: %+v after %+v", i, ev[i], ev[i-1])
		}
	}
	if diff := cmp.Diff(ev, DrawFailures(c, 0.01, 1000*3600, 1)); diff != "" {
		t.Errorf("not repeatable:\n%s", diff)
	}
}

// The engine restarts a 24-GPU gang inside one leaf after one of its
// nodes fails: every other leaf is free.
func TestFailureEngineKeepsLeaf(t *testing.T) {
	c := topotest.Lab16()
	jobs := []Job{{Name: "g", Submit: 0, Duration: 1000, GPUs: 24}}
	res, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0].Tier != topology.TierLeaf {
		t.Fatalf("ran in tier %v", res.Outcomes[0].Tier)
	}
	// the replay is deterministic: the same placement again, and node01
	// (the engine fills leaf1 first) fails under it
	probe := Config{Failures: &Failures{Events: []NodeFailure{{At: 10, Node: 0}}, Repair: 1e9}}
	res, err = Replay(c, jobs, NewGangTopo(c, place.Options{}), probe)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0].Failures == 0 {
		t.Fatal("node01 was not under the gang")
	}
	if len(res.Restarts) != 1 || res.Restarts[0].New != topology.TierLeaf || res.Restarts[0].Wait() != DefaultRequeueDelay {
		t.Errorf("restarts %+v; want one, in a leaf, after the requeue delay", res.Restarts)
	}
}

// Slurm's expedited requeue: the requeued job is eligible at once, ahead
// of the jobs waiting. Lab16, first fit: job 0 (16 GPUs) runs on
// node01-02, job 1 on node03-15 until 5000, job 2 (16 GPUs) waits with
// node16 free. node02 fails at 100, freeing node01: without expedite,
// job 2 takes node01 and node16 at once and job 0, eligible at 221, waits
// for job 2 to end (1100); expedited, job 0 restarts there at 100 and job
// 2 waits.
func TestFailureExpedited(t *testing.T) {
	c := topotest.Lab16()
	node02, _ := c.NodeByName("node02")
	jobs := []Job{{Name: "gang", Submit: 0, Duration: 1000, GPUs: 16}, {Name: "rest", Submit: 1, Duration: 5000, GPUs: 104},
		{Name: "waits", Submit: 20, Duration: 1000, GPUs: 16}}
	for _, tt := range []struct {
		expedite             bool
		restart, job2, delay float64
	}{{false, 1100, 100, 1000}, {true, 100, 1100, 0}} {
		cfg := Config{Slowdown: NoSlowdown(),
			Failures: &Failures{Events: []NodeFailure{{At: 100, Node: node02}}, Repair: 1e6, Expedite: tt.expedite}}
		res, err := Replay(c, jobs, firstFit{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Restarts) != 1 || res.Restarts[0].Start != tt.restart || res.Restarts[0].Wait() != tt.delay || res.Outcomes[2].Start != tt.job2 {
			t.Errorf("expedite %v: restarts %+v, job 2 started at %v; want job 0 again at %v, job 2 at %v", tt.expedite, res.Restarts, res.Outcomes[2].Start, tt.restart, tt.job2)
		}
	}
}

// An expedited job goes back ahead of every waiting job, the others in
// submit order.
func TestEnqueueExpedited(t *testing.T) {
	g := &gangSim{queue: []int32{1, 3, 7}, fails: &failSim{top: map[int32]bool{9: true, 5: true}}}
	for _, j := range []int32{9, 4, 5, 0} {
		g.enqueue(j)
	}
	if diff := cmp.Diff([]int32{5, 9, 0, 1, 3, 4, 7}, g.queue); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
}

// spareKeeper is first fit that keeps node04 (a spare) for the jobs it
// re-bound after a node failure, the controller's cycle every 5 s.
type spareKeeper struct {
	firstFit
	restarted map[string]bool
}

func (p *spareKeeper) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	if p.restarted[r.JobID] {
		return p.firstFit.Place(s, r)
	}
	spare, _ := s.Cluster.NodeByName("node04")
	saved := s.State[spare]
	s.State[spare] = occupancy.StateDown
	defer func() { s.State[spare] = saved }()
	return p.firstFit.Place(s, r)
}

func (p *spareKeeper) Submit(*occupancy.Snapshot, *request.Request)     {}
func (p *spareKeeper) Stale(*occupancy.Snapshot, *request.Request) bool { return false }
func (p *spareKeeper) Rebind(*occupancy.Snapshot, *request.Request) bool {
	return false
}
func (p *spareKeeper) RebindInterval() float64 { return 5 }
func (p *spareKeeper) Restart(_ *occupancy.Snapshot, r *request.Request, _ []topology.NodeID) bool {
	p.restarted[r.JobID] = true
	return true
}

// Re-bound at the requeue (AtRequeue, the EpilogSlurmctld hook) or at the
// controller's next cycle, under Slurm's expedited requeue. Lab16, node04
// a spare: job 0 (24 GPUs) runs on node01-03, job 1 on node05-16 until
// 5001, job 2 (8 GPUs, 50 s) waits. node02 fails at 100. At the next
// cycle: job 0, still without the spare, cannot start; backfill gives
// node01 to job 2, and job 0, re-bound at 105, restarts when job 2 ends
// (150). At the requeue: job 0 restarts at once on node01, node03 and the
// spare.
func TestFailureReboundAtRequeue(t *testing.T) {
	c := topotest.Lab16()
	node02, _ := c.NodeByName("node02")
	jobs := []Job{{Name: "gang", Submit: 0, Duration: 1000, GPUs: 24}, {Name: "rest", Submit: 1, Duration: 5000, GPUs: 96},
		{Name: "short", Submit: 20, Duration: 50, GPUs: 8}}
	for _, tt := range []struct {
		atRequeue     bool
		restart, job2 float64
	}{{false, 150, 100}, {true, 100, 1100}} {
		cfg := Config{Slowdown: NoSlowdown(), Failures: &Failures{Events: []NodeFailure{{At: 100, Node: node02}}, Repair: 1e6,
			Expedite: true, AtRequeue: tt.atRequeue}}
		res, err := Replay(c, jobs, &spareKeeper{restarted: map[string]bool{}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Restarts) != 1 || res.Restarts[0].Start != tt.restart || res.Outcomes[2].Start != tt.job2 {
			t.Errorf("at requeue %v: restarts %+v, job 2 started at %v; want job 0 again at %v, job 2 at %v",
				tt.atRequeue, res.Restarts, res.Outcomes[2].Start, tt.restart, tt.job2)
		}
	}
}

// Made eligible at the controller's next cycle (AtOnce) instead of after
// Slurm's requeue delay. Lab16, node04 a spare: job 0 (24 GPUs) runs on
// node01-03, job 1 on node05-16 until 5001. node02 fails at 100; job 2 (8
// GPUs, 500 s) is submitted at 110. After the delay: job 2 takes node01
// at 110 and job 0, eligible at 221, restarts when job 2 ends (610). At
// once: job 0, re-bound and eligible at the cycle of 105, restarts then on
// node01, node03 and the spare; job 2 waits for it. A failure at 104 is
// made eligible at the cycle of 110 (RestartMargin).
func TestFailureRestartAtOnce(t *testing.T) {
	c := topotest.Lab16()
	node02, _ := c.NodeByName("node02")
	jobs := []Job{{Name: "gang", Submit: 0, Duration: 1000, GPUs: 24}, {Name: "rest", Submit: 1, Duration: 5000, GPUs: 96},
		{Name: "after", Submit: 110, Duration: 500, GPUs: 8}}
	for _, tt := range []struct {
		atOnce, atRequeue      bool
		failure, restart, job2 float64
	}{{false, false, 100, 610, 110}, {true, false, 100, 105, 1105}, {true, true, 100, 105, 1105},
		// a failure at 104: the cycle of 105 comes less than RestartMargin
		// after it, so the job is made eligible at 110, ahead of job 2
		{true, false, 104, 110, 1110}} {
		cfg := Config{Slowdown: NoSlowdown(), Failures: &Failures{Events: []NodeFailure{{At: tt.failure, Node: node02}}, Repair: 1e6,
			AtOnce: tt.atOnce, AtRequeue: tt.atRequeue}}
		res, err := Replay(c, jobs, &spareKeeper{restarted: map[string]bool{}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Restarts) != 1 || res.Restarts[0].Start != tt.restart || res.Outcomes[2].Start != tt.job2 {
			t.Errorf("at once %v, at requeue %v: restarts %+v, job 2 started at %v; want job 0 again at %v, job 2 at %v",
				tt.atOnce, tt.atRequeue, res.Restarts, res.Outcomes[2].Start, tt.restart, tt.job2)
		}
	}
}

// A gang that ran on a node it shared is Spread; one whose freed GPUs went
// to other jobs before it was eligible again is Short. Lab16, first fit:
// job 0 (4 GPUs) takes node01:0-3, the gang (12) node01:4-7 and node02,
// jobs 2 and 3 node03 and node04. node02 fails at 100; job 4 (4 GPUs,
// submitted at 150) takes node01:4-7, so at 221 leaf1 has no GPU free for
// the gang, which restarts in leaf2.
func TestFailureSpreadAndShort(t *testing.T) {
	c := topotest.Lab16()
	node02, _ := c.NodeByName("node02")
	jobs := []Job{{Name: "small", Submit: 0, Duration: 5000, GPUs: 4}, {Name: "gang", Submit: 0, Duration: 1000, GPUs: 12},
		{Name: "n3", Submit: 0, Duration: 5000, GPUs: 8}, {Name: "n4", Submit: 0, Duration: 5000, GPUs: 8},
		{Name: "late", Submit: 150, Duration: 5000, GPUs: 4}}
	cfg := Config{Slowdown: NoSlowdown(), Failures: &Failures{Events: []NodeFailure{{At: 100, Node: node02}}, Repair: 500}}
	res, err := Replay(c, jobs, firstFit{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []Restart{{Job: 1, At: 100, Start: 221, Old: topology.TierLeaf, New: topology.TierLeaf, Spread: true, Short: true}}
	if diff := cmp.Diff(want, res.Restarts); diff != "" {
		t.Errorf("restarts (-want +got):\n%s", diff)
	}
}
