package e2e

import (
	"strings"
	"testing"
	"time"
)

func init() {
	register("DeployedPathBeatsStockSlurm", testDeployedPathBeatsStockSlurm)
}

// testDeployedPathBeatsStockSlurm runs one mixed sequence through the
// lab twice, with the plugins under `jobs: all` and without them (stock
// Slurm, the same daemons): CPU-only jobs, a job array of 1-GPU tasks,
// then a late 32-GPU gang asking for 8 CPUs per GPU (a whole node's CPUs).
// Leaves 3 and 4 start full, leaf 2 with two GPUs free per node, leaf 1
// empty. Stock Slurm puts the CPU jobs and the small tasks where its own
// order says, on leaf 1's whole nodes; gangtopo puts the CPU jobs where
// their CPUs strand no GPU (the full nodes) and the tasks into leaf 2's
// holes, so leaf 1 stays whole and the gang starts there.
func testDeployedPathBeatsStockSlurm(t *testing.T) {
	writeConfig(t, labConfigAll)
	defer writeConfig(t, labConfig)
	with := mixedSequence(t)
	var stock mixedOutcome
	asStockSlurm(t, func() { stock = mixedSequence(t) })
	t.Logf("whole free nodes after each step: gangtopo %v, stock Slurm %v", with.wholeFree, stock.wholeFree)
	t.Logf("gang: gangtopo %s %v, stock Slurm %s %v", with.gangState, with.gangLeaves, stock.gangState, stock.gangLeaves)
	if with.gangState != "RUNNING" || len(with.gangLeaves) != 1 {
		t.Errorf("with gangtopo the late gang is %s in %v; want RUNNING in one leaf", with.gangState, with.gangLeaves)
	}
	if stock.gangState == "RUNNING" && len(stock.gangLeaves) == 1 {
		t.Errorf("stock Slurm also ran the gang in one leaf (%v): the sequence no longer tells them apart", stock.gangLeaves)
	}
	for i := range with.wholeFree {
		if i < len(stock.wholeFree) && with.wholeFree[i] < stock.wholeFree[i] {
			t.Errorf("step %d: gangtopo left %d whole free nodes, stock Slurm %d", i+1, with.wholeFree[i], stock.wholeFree[i])
		}
	}
}

type mixedOutcome struct {
	wholeFree  []int // nodes with nothing allocated, after each step before the gang
	gangState  string
	gangLeaves []string
}

func mixedSequence(t *testing.T) mixedOutcome {
	t.Helper()
	reset(t)
	fill(t, whole("node09", "node10", "node11", "node12", "node13", "node14", "node15", "node16"))
	fillOnes(t, 6, "node05", "node06", "node07", "node08")
	var out mixedOutcome
	step := func() {
		publish(t)
		out.wholeFree = append(out.wholeFree, len(freeWholeNodes(t)))
	}
	for range 2 {
		j := running(t, "-p", "gpu", "-n", "1", "-c", "40", "--mem=1000")
		t.Logf("CPU-only job %s on %v (%s)", j.ID, j.Nodes, j.AdminComment)
		step()
	}
	arrayRuns(t, 6, "-p", "gpu", "--array=0-5", "--gpus=1", "--cpus-per-gpu=1")
	step()
	gang := settle(t, submit(t, "-p", "gpu", "--gpus=32", "--cpus-per-gpu=8"))
	out.gangState = gang.State
	if gang.State == "RUNNING" {
		out.gangLeaves = leavesOf(t, gang)
	}
	return out
}

// arrayRuns submits a job array and waits until its n tasks run.
func arrayRuns(t *testing.T, n int, args ...string) {
	t.Helper()
	id := submit(t, args...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-r", "-j", id, "-t", "running", "-o", "%i")
		if err != nil {
			t.Fatal(err)
		}
		if len(strings.Fields(out)) == n {
			return
		}
		if time.Now().After(deadline) {
			all, _ := lab.Run(ctxT(t), 0, "squeue", "-h", "-r", "-j", id, "-o", "%i %T %r %N")
			t.Fatalf("array %s: %d of %d tasks running after 30 s:\n%s", id, len(strings.Fields(out)), n, all)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
