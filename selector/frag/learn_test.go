package frag

import (
	"math"
	"testing"

	"github.com/gangtopo/gangtopo/selector/topology"
)

func TestLearner(t *testing.T) {
	prior := PhillyPrior(1)
	l := NewLearner(1000)
	one := Observation{Node: NodeShape{GPUs: 1, Milli: 1000, CPUMilli: 8000}}
	share := Observation{Node: NodeShape{GPUs: 1, Milli: 470, CPUMilli: 4000}}
	gang := Observation{Node: NodeShape{GPUs: 8, Milli: 1000, CPUMilli: 64000}, Nodes: 4}
	// 150 one-GPU jobs, 30 shares, 20 gangs of 4 nodes: 200 jobs
	for i := 0; i < 200; i++ {
		o := one
		switch {
		case i >= 180:
			o = gang
		case i >= 150:
			o = share
		}
		if !l.Observe(itoa(i), o) {
			t.Fatalf("job %d counted as seen", i)
		}
	}
	if l.Observe("3", gang) {
		t.Error("a job seen again counted twice")
	}
	w, ok, err := l.Workload(0.95, prior)
	if err != nil || !ok {
		t.Fatalf("learned: %v, %v", ok, err)
	}
	// singles: 150 whole (83%) and 30 shares (17%) of 180, both kept by
	// the 95% cut; each weighted by 180/200; gangs 20/200
	want := map[int]float64{1000: 0.75, 470: 0.15}
	for _, s := range w.Node {
		if math.Abs(s.Weight-want[s.Milli]) > 1e-9 {
			t.Errorf("shape %+v weight %g, want %g", s, s.Weight, want[s.Milli])
		}
	}
	if len(w.Gangs) != 1 || w.Gangs[0].Nodes != 4 || w.Gangs[0].Tier != topology.TierLeaf || math.Abs(w.Gangs[0].Weight-0.1) > 1e-9 {
		t.Errorf("gangs %+v, want one 4-node leaf gang of weight 0.1", w.Gangs)
	}
}

func TestLearnerStartsFromThePriorAndForgets(t *testing.T) {
	prior := PhillyPrior(1)
	l := NewLearner(MinJobs)
	for i := 0; i < MinJobs-1; i++ {
		l.Observe(itoa(i), Observation{Node: NodeShape{GPUs: 2, Milli: 1000}})
	}
	if w, ok, _ := l.Workload(0.95, prior); ok || len(w.Node) != len(prior.Node) {
		t.Errorf("with %d jobs: learned %v, %d shapes; want the prior", l.Len(), ok, len(w.Node))
	}
	// the window holds MinJobs: the 2-GPU jobs are pushed out by 1-GPU ones
	for i := 0; i < MinJobs; i++ {
		l.Observe("new"+itoa(i), Observation{Node: NodeShape{GPUs: 1, Milli: 1000}})
	}
	w, ok, _ := l.Workload(0.95, prior)
	if !ok || len(w.Node) != 1 || w.Node[0].GPUs != 1 {
		t.Errorf("after the window turned over: %v %+v; want only the 1-GPU shape", ok, w.Node)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
