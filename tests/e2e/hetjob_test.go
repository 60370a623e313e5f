package e2e

import (
	"strings"
	"testing"
	"time"
)

func init() {
	register("HetJobComponentsPlaced", testHetJobComponentsPlaced)
}

// testHetJobComponentsPlaced: slurmctld calls job_submit once per
// component of a heterogeneous job, and gangtopo places each as a job of
// its own (held in turn, so the second does not take the first's GPUs):
// a 1-GPU launcher goes into node02's hole, a 16-GPU leaf gang into leaf4,
// the only leaf with room. Each component carries its own decision and
// binding, so an update must name the component (JobId=ID+1): one naming
// the whole job is refused, one naming a component keeps its binding. The
// job then starts as decided (Slurm starts heterogeneous jobs from its
// backfill pass, up to bf_interval, 30 s, later).
func testHetJobComponentsPlaced(t *testing.T) {
	reset(t)
	defer cancelUser(t, nobody)
	busy := whole("node01", "node03", "node04", "node05", "node06", "node07", "node08", "node09", "node10", "node11", "node12")
	busy["node02"] = 6
	fill(t, busy)
	out, err := lab.RunAs(ctxT(t), nobody, nobody, "sbatch", "--parsable", "-o", "/dev/null", "--hold",
		"--gpus=1", "--cpus-per-gpu=1", ":", "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf", "--wrap", "sleep 1000")
	must(t, err)
	id := strings.TrimSpace(out)
	launcher, err := lab.ShowJob(ctxT(t), id+"+0")
	must(t, err)
	gang, err := lab.ShowJob(ctxT(t), id+"+1")
	must(t, err)
	if !strings.HasPrefix(launcher.Features, "[gt_node02|") || !strings.HasPrefix(launcher.AdminComment, "gangtopo v1 placed") {
		t.Errorf("component 0: Features %q, decision %q; want node02's hole first", launcher.Features, launcher.AdminComment)
	}
	if gang.Features != "[gt_leaf4|gt_leaf1|gt_leaf2|gt_leaf3]" || !strings.Contains(gang.AdminComment, "request=leaf:required gpus=16 shape=2x8 domain=leaf4") {
		t.Errorf("component 1: Features %q, decision %q; want bound to leaf4 first, 2x8", gang.Features, gang.AdminComment)
	}
	publish(t) // the bindings, by component

	_, err = lab.RunAs(ctxT(t), nobody, nobody, "scontrol", "update", "JobId="+id, "Features=gt_spine2")
	if err == nil {
		t.Errorf("an update of the whole heterogeneous job's features was accepted")
	}
	if _, err := lab.RunAs(ctxT(t), nobody, nobody, "scontrol", "update", "JobId="+id+"+1", "Features=gt_spine2"); err != nil {
		t.Fatal(err)
	}
	gang, err = lab.ShowJob(ctxT(t), id+"+1")
	must(t, err)
	if gang.Features != "(gt_spine2)&[gt_leaf4|gt_leaf1|gt_leaf2|gt_leaf3]" {
		t.Errorf("component 1 after the user's update: Features %q", gang.Features)
	}
	if launcher, _ = lab.ShowJob(ctxT(t), id+"+0"); !strings.HasPrefix(launcher.Features, "[gt_node02|") {
		t.Errorf("component 0 after an update of component 1: Features %q", launcher.Features)
	}

	if _, err := lab.RunAs(ctxT(t), nobody, nobody, "scontrol", "release", id); err != nil {
		t.Fatal(err)
	}
	l := waitRunning(t, id+"+0", 45*time.Second)
	g := waitRunning(t, id+"+1", 5*time.Second)
	if strings.Join(l.Nodes, ",") != "node02" || strings.Join(leavesOf(t, g), ",") != "leaf4" {
		t.Errorf("started on %v and %v; want node02 and leaf4", l.Nodes, g.Nodes)
	}
}
