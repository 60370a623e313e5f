package queue

import (
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// staleAtSubmit is a deciding policy whose decisions are stale from the
// start: a job does not start until the controller has re-bound it once.
type staleAtSubmit struct {
	*GangTopo
	bound   map[string]bool // by job: submitted, not re-bound yet
	submits int
}

func (p *staleAtSubmit) Submit(_ *occupancy.Snapshot, r *request.Request) {
	p.bound[r.JobID] = true
	p.submits++
}

func (p *staleAtSubmit) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	if p.bound[r.JobID] {
		return occupancy.Allocation{}, false
	}
	return p.GangTopo.Place(s, r)
}

func (p *staleAtSubmit) Stale(*occupancy.Snapshot, *request.Request) bool { return true }
func (p *staleAtSubmit) Rebind(_ *occupancy.Snapshot, r *request.Request) bool {
	delete(p.bound, r.JobID)
	return true
}
func (p *staleAtSubmit) RebindInterval() float64 { return 5 }

// Jobs submitted at 1 s and 7 s on an empty cluster wait for the
// controller's cycles at 5 s and 10 s: 4 + 3 s of self-inflicted wait,
// two re-bindings, none longer than a cycle.
func TestDecidingPolicyIsRebound(t *testing.T) {
	c := topotest.FatTree(0, 1, 2, topotest.DGXH100)
	pol := &staleAtSubmit{GangTopo: NewGangTopo(c, place.Options{}), bound: map[string]bool{}}
	jobs := []Job{{Name: "a", Submit: 1, Duration: 60, GPUs: 1}, {Name: "b", Submit: 7, Duration: 60, GPUs: 2}}
	res, err := Replay(c, jobs, pol, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcomes[0].Start != 5 || res.Outcomes[1].Start != 10 {
		t.Errorf("started at %g and %g, want 5 and 10", res.Outcomes[0].Start, res.Outcomes[1].Start)
	}
	if pol.submits != 2 || res.Rebinds != 2 || math.Abs(res.SelfWaitSeconds-7) > 1e-9 || res.SelfWaitsOverCycle != 0 {
		t.Errorf("submits %d, rebinds %d, self-wait %g s, over a cycle %d; want 2, 2, 7, 0",
			pol.submits, res.Rebinds, res.SelfWaitSeconds, res.SelfWaitsOverCycle)
	}
}

// stateKey: equal for equal states, another key when any field a decision
// reads differs (a GPU's free share, a node's free CPUs, memory, state).
func TestStateKey(t *testing.T) {
	c := topotest.Lab16()
	rb := &rebinder{}
	base := occupancy.New(c)
	key := rb.stateKey(base)
	if again := rb.stateKey(base.Clone()); again != key {
		t.Fatalf("the same state: keys %x and %x", key, again)
	}
	changes := map[string]func(s *occupancy.Snapshot){
		"a GPU's free share":   func(s *occupancy.Snapshot) { s.FreeMilli[9] -= 500 },
		"a node's free CPUs":   func(s *occupancy.Snapshot) { s.FreeCPUMilli[3] -= 1000 },
		"a node's free memory": func(s *occupancy.Snapshot) { s.FreeMemMiB[15] -= 1 << 33 },
		"a node's state":       func(s *occupancy.Snapshot) { s.SetState(2, occupancy.StateDown) },
	}
	for name, change := range changes {
		s := base.Clone()
		change(s)
		if rb.stateKey(s) == key {
			t.Errorf("%s changed: the key did not", name)
		}
	}
}
