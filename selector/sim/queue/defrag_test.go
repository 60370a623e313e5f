package queue

import (
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// TestDefragStartsAWaitingGang: four 24-GPU jobs take a leaf each of
// lab16 (4 leaves x 32 GPUs), leaving 8 GPUs free per leaf; a 32-GPU gang
// that must fit one leaf waits. With the policy (32+ GPUs, after 60 s,
// evaluated each minute) it starts at 120 s (the first cycle after 10 + 60
// s), requeuing one 24-GPU job,
// which waits for a leaf again; without it the gang waits for a job to
// end. A second gang, at 100 s, finds the first cheap to take (it has run
// only 60 s) but protected: it takes another 24-GPU job, at 180 s (the
// first cycle after 100 + 60 s).
func TestDefragStartsAWaitingGang(t *testing.T) {
	c := topotest.Lab16()
	jobs := []Job{
		{Name: "a", Submit: 0, Duration: 10000, GPUs: 24}, {Name: "b", Submit: 0, Duration: 10000, GPUs: 24}, {Name: "c", Submit: 0, Duration: 10000, GPUs: 24}, {Name: "d", Submit: 0, Duration: 10000, GPUs: 24},
		{Name: "gang1", Submit: 10, Duration: 5000, GPUs: 32}, {Name: "gang2", Submit: 100, Duration: 5000, GPUs: 32},
	}
	cfg := Config{GangOption: request.Option{Tier: topology.TierLeaf, Mode: request.Required}, Slowdown: mustSlowdown(t, "none")}
	off, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if off.Outcomes[4].Start != 10000 || len(off.Requeues) != 0 {
		t.Fatalf("without the policy gang1 starts at %g with %d requeues, want 10000 and none", off.Outcomes[4].Start, len(off.Requeues))
	}
	cfg.Defrag = &Defrag{MinGPUs: 32, MinWait: 60, Interval: 60, MaxPerCycle: 1,
		Limits: defrag.Limits{MaxPerHour: 10, BudgetFraction: 1, BudgetWindow: time.Hour, Window: time.Hour},
		Cost:   defrag.CostModel{RestartOverhead: time.Minute}}
	on, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := on.Outcomes[4], on.Outcomes[5]
	if g1.Start != 120 || g2.Start != 180 || g1.Requeues != 0 {
		t.Errorf("gangs start at %g and %g (gang1 requeued %d times), want 120, 180 and never", g1.Start, g2.Start, g1.Requeues)
	}
	if len(on.Requeues) != 2 || on.DefragPlans != 2 {
		t.Fatalf("%d requeues, %d plans; want 2 and 2", len(on.Requeues), on.DefragPlans)
	}
	for _, q := range on.Requeues {
		if q.GPUs != 24 || q.Start != 0 {
			t.Errorf("requeued %s (%d GPUs, ran from %g to %g); want one of the 24-GPU jobs", jobs[q.Job].Name, q.GPUs, q.Start, q.At)
		}
	}
	s := Summarize(on)
	// 24 GPUs x 120 s + 24 x 180 s lost
	if want := (24*120 + 24*180) / 3600.0; s.LostGPUHours != want || s.Requeues != 2 {
		t.Errorf("lost %g GPU-h in %d requeues, want %g in 2", s.LostGPUHours, s.Requeues, want)
	}
	// without the window the gangs take each other in turn: the first is
	// the cheapest for the second
	// (32 GPUs x (60 s + 60 s overhead) against 24 x (180 + 60))
	cfg.Defrag.Limits.Window = 0
	loose, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if loose.Outcomes[4].Requeues == 0 {
		t.Errorf("without the window gang1 was requeued %d times, want at least once (the test would not catch a missing protection)", loose.Outcomes[4].Requeues)
	}
	cfg.Defrag.Limits.Window = time.Hour
	// a budget too small for one requeue: nothing is done
	cfg.Defrag.Limits.BudgetFraction = 1e-6
	tight, err := Replay(c, jobs, NewGangTopo(c, place.Options{}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(tight.Requeues) != 0 || tight.Outcomes[4].Start != 10000 {
		t.Errorf("with no budget: %d requeues, gang1 at %g", len(tight.Requeues), tight.Outcomes[4].Start)
	}
}

func mustSlowdown(t *testing.T, s string) Slowdown {
	t.Helper()
	sd, err := ParseSlowdown(s)
	if err != nil {
		t.Fatal(err)
	}
	return sd
}
