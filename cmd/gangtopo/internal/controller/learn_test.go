package controller

import (
	"strconv"
	"testing"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// The controller learns the mix from the jobs it sees running: nothing is
// published until enough distinct jobs were seen, then the mix of the
// running jobs' shapes, gangs with their tier, recomputed every mixEvery
// cycles.
func TestControllerLearnsTheMix(t *testing.T) {
	c := topotest.Lab16()
	m := newMixLearner(frag.PhillyPrior(1))
	s := occupancy.New(c)
	add := func(id string, nodes []string, gpus int, milli uint16, req string) {
		var a occupancy.Allocation
		for _, name := range nodes {
			n, _ := c.NodeByName(name)
			var g []int
			for i := 0; i < gpus; i++ {
				g = append(g, i)
			}
			a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: n, GPUs: g, Milli: milli, CPUMilli: int32(gpus * 2000)})
		}
		s.Jobs = append(s.Jobs, occupancy.Job{ID: id, Request: req, Alloc: a})
	}
	for i := 0; i < frag.MinJobs-10; i++ {
		add(strconv.Itoa(i), []string{"node01"}, 1, 500, "")
	}
	if mix, _, err := m.observe(c, s); mix != nil || err != nil {
		t.Fatalf("published %+v (%v) before %d jobs were seen", mix, err, frag.MinJobs)
	}
	for i := 0; i < 20; i++ {
		add("g"+strconv.Itoa(i), []string{"node05", "node06"}, 8, 1000, "spine:required")
	}
	for range mixEvery - 1 {
		if mix, _, _ := m.observe(c, s); mix != nil {
			t.Fatal("relearned before mixEvery cycles")
		}
	}
	mix, changed, err := m.observe(c, s) // the same jobs again count once
	if err != nil || !changed || mix == nil {
		t.Fatalf("no mix after %d cycles: %v", mixEvery+1, err)
	}
	if mix.Jobs != frag.MinJobs+10 || len(mix.Node) != 1 || mix.Node[0].Milli != 500 || mix.Node[0].CPUMilli != 2000 ||
		len(mix.Gangs) != 1 || mix.Gangs[0].Nodes != 2 || mix.Gangs[0].Tier != "spine" {
		t.Errorf("mix %+v", mix)
	}
}

// A job's accepted GPU models come from its decision line (occupancy.Job
// Models); the learned shapes keep them, so the plugin's engine can leave
// a scarce model to the jobs that need it. A model the cluster lacks is
// left out.
func TestControllerLearnsModelConstraints(t *testing.T) {
	c := topotest.Lab16() // every GPU an h100
	m := newMixLearner(frag.PhillyPrior(1))
	s := occupancy.New(c)
	n, _ := c.NodeByName("node01")
	for i := range frag.MinJobs {
		models := []string{"h100"}
		if i%2 == 1 {
			models = []string{"h100", "b200"} // b200: not in the cluster
		}
		s.Jobs = append(s.Jobs, occupancy.Job{ID: strconv.Itoa(i), Models: models,
			Alloc: occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n, GPUs: []int{0}, Milli: 1000, CPUMilli: 4000}}}})
	}
	mix, _, err := m.observe(c, s)
	if err != nil || mix == nil {
		t.Fatalf("no mix: %v", err)
	}
	if len(mix.Node) != 1 || len(mix.Node[0].Models) != 1 || mix.Node[0].Models[0] != "h100" {
		t.Errorf("learned shapes %+v, want one 1-GPU shape on h100", mix.Node)
	}
}
