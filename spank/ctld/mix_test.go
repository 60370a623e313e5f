package ctld

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// The request mix the controller publishes reaches the engine: a snapshot
// with a mix makes the store build an engine for it, the next job is
// placed by that engine, and a snapshot without one (or with a model the
// cluster lacks) goes back to the default mix.
func TestSnapshotMixReachesTheEngine(t *testing.T) {
	g := gateFixture(t, nil, map[string]int{})
	path := g.Config().Snapshot
	write := func(gen uint64, mix *occupancy.Mix) string {
		s := occupancy.New(g.Cluster())
		s.Generation, s.Time, s.Mix = gen, time.Now(), mix
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Encode(f, "test"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return g.Store().Refresh()
	}
	job := jobsubmit.Job{TresPerJob: "gres:gpu:1"}

	shares := &occupancy.Mix{Jobs: 300, Node: []occupancy.MixShape{{GPUs: 1, Milli: 500, CPUMilli: 4000, Weight: 1}}}
	if msg := write(8, shares); !strings.Contains(msg, "request mix of 300 jobs from the snapshot: 1 node shapes") {
		t.Errorf("load message %q", msg)
	}
	if res := g.Submit(job, time.Now()); res.Action != jobsubmit.Modify {
		t.Fatalf("job not placed: %s", res.Log)
	}
	if g.workload == nil || len(g.workload.Node) != 1 || g.workload.Node[0].Milli != 500 {
		t.Fatalf("the engine measures against %+v, want the snapshot's mix", g.workload)
	}

	bad := &occupancy.Mix{Jobs: 300, Node: []occupancy.MixShape{{GPUs: 1, Milli: 1000, Models: []string{"tpu"}, Weight: 1}}}
	write(9, bad)
	g.Submit(job, time.Now())
	if g.workload != nil {
		t.Errorf("a mix naming a model the cluster lacks was used: %+v", g.workload)
	}
	write(10, shares)
	write(11, nil)
	g.Submit(job, time.Now())
	if g.workload != nil {
		t.Errorf("without a mix the engine should measure against the default, got %+v", g.workload)
	}
}
