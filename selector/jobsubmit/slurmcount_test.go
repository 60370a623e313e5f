package jobsubmit

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// Lab16 as Slurm sees it (tests/slurmlab: SelectTypeParameters=CR_Core,
// one thread per core).
const (
	labNodes    = 16
	labCPUs     = 64
	labMemMiB   = 1000000
	labNodeGPUs = 8
)

// slurmRunsOnLab16 is a model of stock Slurm on an empty Lab16: whether
// it accepts job j and can start it. It is what the lab showed on 22.05.8
// and 26.05.5 (tests/e2e/resource_options_test.go), kept to what both
// run: a job it accepts, both series ran.
//
//   - A task's CPUs (-c) and --mincpus fit one node; --mem fits one node,
//     --mem-per-cpu x one task's CPUs too (memory is not a consumable
//     resource under CR_Core: a node's share is all Slurm checks).
//   - Tasks fit the node count: at most 16 nodes, or the fixed -N, of
//     64 / CPUs-per-task each; --overcommit lifts that.
//   - GPUs: --gpus-per-node at most 8 on each of its nodes, --cpus-per-gpu
//     x those at most 64; --gpus=G over at most the node count's 8 each
//     and at least one per fixed node; --gpus-per-task: whole tasks per
//     node. Tasks of a --gpus job may use nodes without GPUs.
func slurmRunsOnLab16(j Job) bool {
	cpt := max(int(j.CPUsPerTask), 1)
	mem := int64(j.PnMinMemory &^ memPerCPU)
	switch {
	case cpt > labCPUs || int(j.PnMinCPUs) > labCPUs:
		return false
	case j.PnMinMemory&memPerCPU == 0 && mem > labMemMiB:
		return false
	case j.PnMinMemory&memPerCPU != 0 && mem*int64(cpt) > labMemMiB:
		return false
	}
	fixed := j.MinNodes > 0 && j.MaxNodes == j.MinNodes
	nodes := labNodes
	if fixed {
		nodes = int(j.MinNodes)
	}
	// without -n: --ntasks-per-node on each node, else one task per node
	// of a fixed count, else one
	tasks := int(j.NumTasks)
	switch {
	case tasks > 0:
	case j.NtasksPerNode > 0:
		tasks = nodes * int(j.NtasksPerNode)
	case fixed:
		tasks = nodes
	default:
		tasks = 1
	}
	switch {
	case nodes > labNodes || fixed && tasks < nodes:
		return false
	case !j.Overcommit && tasks > nodes*(labCPUs/cpt):
		return false
	case !j.Overcommit && int(j.NtasksPerNode)*cpt > labCPUs:
		return false
	}
	return gpusRun(j, nodes, fixed, tasks, cpt)
}

// gpusRun is slurmRunsOnLab16's part for the job's GPUs.
func gpusRun(j Job, nodes int, fixed bool, tasks, cpt int) bool {
	cpg, _ := perGPU(j.CPUsPerTres)
	perNode, hasNode, _ := parseGPUTres(j.TresPerNode)
	perJob, hasJob, _ := parseGPUTres(j.TresPerJob)
	perTask, hasTask, _ := parseGPUTres(j.TresPerTask)
	// a node holds at most this many GPUs for the job's CPUs per GPU
	room := labNodeGPUs
	if cpg > 0 {
		room = min(room, labCPUs/int(cpg))
	}
	switch {
	case hasNode:
		return perNode.Count <= room
	case hasJob:
		return perJob.Count <= nodes*room && (!fixed || perJob.Count >= nodes)
	case hasTask:
		perNodeTasks := min(room/perTask.Count, labCPUs/cpt)
		return perTask.Count <= room && tasks <= nodes*perNodeTasks
	}
	return true
}

// randomJob draws a job from the options resource_options_test.go covers:
// tasks, CPUs per task, --overcommit, -N, memory in its three forms,
// --exclusive, --mem=0, --mincpus and the GPU forms, each with values
// around Lab16's limits.
func randomJob(r *rand.Rand) Job {
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	j := Job{Partition: "gpu", Overcommit: r.IntN(3) == 0, Shared: Sharing(pick(0, 0, 0, 1, 2))}
	j.NumTasks = uint32(pick(0, 1, 2, 3, 4, 8, 9, 16, 63, 64, 65, 100, 128, 1025))
	j.CPUsPerTask = uint16(pick(0, 1, 2, 3, 8, 16, 40, 64, 65))
	if n := pick(0, 0, 1, 2, 3, 4, 16, 17); n > 0 {
		j.MinNodes, j.MaxNodes = uint32(n), uint32(n)
	}
	if r.IntN(4) == 0 {
		j.NtasksPerNode = uint16(pick(1, 8, 64, 65))
	}
	j.PnMinCPUs = uint16(pick(0, 0, 0, 32, 64, 65))
	switch pick(0, 1, 2, 3, 4) {
	case 4:
		j.MemWholeNode = true // --mem=0
	case 1:
		j.PnMinMemory = uint64(pick(1000, 500000, 1000000, 1000001))
	case 2:
		j.PnMinMemory = memPerCPU | uint64(pick(100, 20000, 1000000, 1000001))
	case 3:
		j.MemPerTres = "gres:gpu:" + strconv.Itoa(pick(1000, 200000, 1000001))
	}
	g := pick(1, 2, 3, 4, 7, 8, 9, 16, 32, 128, 129)
	gpus := pick(0, 1, 2, 3)
	switch gpus {
	case 1:
		j.TresPerJob = fmt.Sprintf("gres:gpu:%d", g)
	case 2:
		j.TresPerNode = fmt.Sprintf("gres:gpu:%d", min(g, 9))
	case 3:
		j.TresPerTask = fmt.Sprintf("gres:gpu:%d", min(g, 9))
	}
	if gpus > 0 && r.IntN(4) == 0 { // (sbatch refuses --cpus-per-gpu without GPUs)
		j.CPUsPerTres = "gres:gpu:" + strconv.Itoa(pick(1, 8, 9, 64, 65))
	}
	// sbatch's own count (slurm_opt_create_job_desc): the node count
	// under --overcommit, else tasks x CPUs per task
	j.MinCPUs = max(j.NumTasks, 1) * uint32(max(j.CPUsPerTask, 1))
	if j.Overcommit {
		j.MinCPUs = max(j.MinNodes, 1)
	}
	return j
}

// checkNeverRefused decides job j on Lab16 (empty, and with leaf2's
// holes) under jobs: all: a job Slurm runs must not be refused, and a job
// gangtopo rewrites must still be one Slurm runs.
func checkNeverRefused(t *testing.T, j Job) {
	t.Helper()
	if !slurmRunsOnLab16(j) {
		return
	}
	d, holes := holesFixture(t)
	empty := occupancy.New(d.Cluster())
	for _, s := range [...]struct {
		name string
		res  Result
	}{{"empty", decide(t, d, empty, j)}, {"holes", decide(t, d, holes, j)}} {
		if s.res.Action == Reject {
			t.Fatalf("%s cluster: refused %+v, which Slurm runs: %s", s.name, j, s.res.ErrMsg)
		}
		if after := s.res.Apply(j); !slurmRunsOnLab16(after) {
			t.Fatalf("%s cluster: rewrote %+v, which Slurm runs, into %+v, which it does not (%s)", s.name, j, after, s.res.Decision)
		}
	}
}

// TestNeverRefusesWhatSlurmRuns: the property over 20,000 drawn jobs.
// It must also see refusals and every verdict, or it proves nothing.
func TestNeverRefusesWhatSlurmRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 5))
	d, s := holesFixture(t)
	e := place.New(d.Cluster(), place.Options{})
	seen := map[Verdict]int{}
	runs := 0
	for range 20000 {
		j := randomJob(r)
		if slurmRunsOnLab16(j) {
			runs++
			checkNeverRefused(t, j)
		}
		res, err := d.Decide(j, s, 1, e)
		if err != nil {
			t.Fatal(err)
		}
		seen[res.Decision.Verdict]++
	}
	for _, v := range []Verdict{VerdictPlaced, VerdictUntouched, VerdictRefused} {
		if seen[v] == 0 {
			t.Errorf("no %s decision among the drawn jobs (%v): the property is not exercised", v, seen)
		}
	}
	if runs < 2000 {
		t.Errorf("only %d of 20000 drawn jobs run on Slurm: the property is not exercised", runs)
	}
	t.Logf("%d of 20000 drawn jobs run on Slurm; decisions %v", runs, seen)
}

// FuzzNeverRefusesWhatSlurmRuns is the property with the fuzzer drawing:
// go test -fuzz=FuzzNeverRefusesWhatSlurmRuns ./selector/jobsubmit/.
func FuzzNeverRefusesWhatSlurmRuns(f *testing.F) {
	for _, seed := range []uint64{1, 22, 65, 2205, 2605} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkNeverRefused(t, randomJob(rand.New(rand.NewPCG(seed, seed>>32))))
	})
}
