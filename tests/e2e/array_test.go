package e2e

import (
	"strings"
	"testing"
	"time"
)

func init() {
	register("ArrayTasksLandPacked", testArrayTasksLandPacked)
}

// testArrayTasksLandPacked: nodes 01-08 have one GPU free each, 09-16 are
// whole. An array of ten 1-GPU tasks is decided task by task: the binding
// lists the eight holes and then whole nodes, so all ten run, eight in
// the holes and two on one whole node, and seven nodes stay whole. (Decided
// as one 1-GPU job, it was bound to the eight ranked holes only: two tasks
// waited for them while eight nodes sat idle.)
func testArrayTasksLandPacked(t *testing.T) {
	reset(t)
	holes := map[string]int{}
	for _, n := range []string{"node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08"} {
		holes[n] = 7
	}
	fill(t, holes)
	id := submit(t, "--array=0-9", "--gpus=1", "--cpus-per-gpu=1")
	tasksRun(t, id, 10)
	j, err := lab.ShowJob(ctxT(t), id+"_0")
	must(t, err)
	if !strings.Contains(j.AdminComment, " tasks=10 ") {
		t.Errorf("decision %q; want tasks=10", j.AdminComment)
	}
	out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-r", "-j", id, "-o", "%N")
	must(t, err)
	onNodes := map[string]int{}
	for _, n := range strings.Fields(out) {
		onNodes[n]++
	}
	if len(onNodes) != 9 {
		t.Errorf("tasks on %v; want the eight holes and one whole node", onNodes)
	}
	if free := freeWholeNodes(t); len(free) != 7 {
		t.Errorf("whole free nodes %v; want 7", free)
	}
}

// tasksRun waits until n tasks of array id run.
func tasksRun(t *testing.T, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-r", "-j", id, "-t", "running", "-o", "%i")
		must(t, err)
		if len(strings.Fields(out)) == n {
			return
		}
		if time.Now().After(deadline) {
			all, _ := lab.Run(ctxT(t), 0, "squeue", "-h", "-r", "-j", id, "-o", "%i %T %r %N %f")
			t.Fatalf("array %s: %d of %d tasks running after 30 s:\n%s", id, len(strings.Fields(out)), n, all)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
