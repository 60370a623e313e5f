package slurmscale

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// The workload: every job runs `exec sleep` (one process besides its
// slurmstepd, no work), submitted with the real sbatch.
//
//   - fill: long jobs that occupy about FillFraction of the GPUs before the
//     backlog comes, mostly whole nodes and multi-node gangs (few jobs per
//     GPU: every running job is a slurmstepd and a process on this
//     machine), requeueable (the defragmentation may requeue them).
//   - backlog: the jobs that wait, drawn from the Philly mix of GPU counts
//     (85.9% one GPU ... 0.35% 32 GPUs) with time limits (backfill needs
//     them), by kind: plain jobs, gangs of 16 and 32 GPUs (leaf:required
//     with the plugin), array tasks (arrays of 20 tasks, at most 2 at a
//     time), and three kinds no re-binding can help: held (-H), waiting
//     on a dependency that never ends (afterok on a fill job), and held by
//     a QOS limit (where the lab has accounting).
//   - stream: while a window is measured, one backlog job submitted and one
//     cancelled every streamEvery, and one running fill job cancelled and
//     replaced every fillChurnEvery (room opens, bindings go stale).
//
// Jobs are spread over the accounts round robin where the lab has
// accounting (several accounts with fair-share shares).

// Kind is a backlog job's kind.
type Kind string

// The kinds.
const (
	KindFill  Kind = "fill"
	KindPlain Kind = "plain"
	KindGang  Kind = "gang"
	KindArray Kind = "array"
	KindHeld  Kind = "held"
	KindDep   Kind = "dependency"
	KindQOS   Kind = "qos-limited"
)

// Helpless says no re-binding can help a job of this kind: it may not
// start whatever the nodes.
func (k Kind) Helpless() bool { return k == KindHeld || k == KindDep || k == KindQOS }

// arrayTasks is the size of each backlog array (and its throttle).
const (
	arrayTasks    = 20
	arrayThrottle = 2
)

// backlogMix is the share of each kind among the backlog's jobs (array
// tasks counted one by one); KindQOS goes to plain without accounting.
var backlogMix = []struct {
	kind  Kind
	share float64
}{{KindPlain, 0.70}, {KindGang, 0.05}, {KindArray, 0.10}, {KindHeld, 0.05}, {KindDep, 0.05}, {KindQOS, 0.05}}

// philly is the Philly trace's GPU counts and their weights.
var philly = struct {
	gpus   []int
	weight []float64
}{[]int{1, 2, 4, 8, 16, 32}, []float64{0.859, 0.020, 0.021, 0.086, 0.0104, 0.0035}}

// fillMix is the fill's GPU counts and the share of GPUs each takes:
// whole nodes and gangs mostly, so that a 1,024-node lab runs about 1,200
// jobs, not 6,000.
var fillMix = []struct {
	gpus  int
	share float64
}{{8, 0.55}, {16, 0.18}, {32, 0.12}, {4, 0.08}, {2, 0.03}, {1, 0.04}}

// Job is one submission.
type Job struct {
	Kind Kind
	GPUs int // per job, or per task of an array
	Jobs int // jobs it makes: 1, or an array's tasks
	args []string
}

// workload draws jobs; one per lab, not safe for concurrent use.
type workload struct {
	rng      *rand.Rand
	accounts []string
	qos      string   // the QOS that holds KindQOS jobs ("" without accounting)
	deps     []string // fill job IDs (running, never ending) for dependencies
	next     int
	gpusPer  int // GPUs a node has
}

func newWorkload(seed uint64, accounts []string, qos string, gpusPerNode int) *workload {
	return &workload{rng: rand.New(rand.NewPCG(seed, seed)), accounts: accounts, qos: qos, gpusPer: gpusPerNode}
}

// common are the arguments every job has: no output, its account, a time
// limit, one CPU per GPU.
func (w *workload) common(limit string) []string {
	args := []string{"-o", "/dev/null", "-p", "gpu", "--time=" + limit, "--cpus-per-gpu=1"}
	if len(w.accounts) > 0 {
		args = append(args, "-A", w.accounts[w.next%len(w.accounts)])
		w.next++
	}
	return args
}

// fill draws fill jobs totalling about gpus GPUs, largest first (so that
// Slurm packs the whole nodes before the small jobs).
func (w *workload) fill(gpus int) []Job {
	var out []Job
	for _, m := range fillMix {
		size := min(m.gpus, w.gpusPer*4)
		for n := int(float64(gpus)*m.share) / size; n > 0; n-- {
			args := append(w.common("24:00:00"), "--requeue", "--gpus="+strconv.Itoa(size), "--wrap", "exec sleep 86400")
			out = append(out, Job{Kind: KindFill, GPUs: size, Jobs: 1, args: args})
		}
	}
	return out
}

// backlog draws jobs jobs of the backlog's mix (an array counts its
// tasks); plugins says whether the gangtopo plugins are loaded (the
// --gang-topology option exists only then).
func (w *workload) backlog(jobs int, plugins bool) []Job {
	var out []Job
	for made := 0; made < jobs; {
		j := w.backlogJob(w.kind(), plugins)
		out = append(out, j)
		made += j.Jobs
	}
	return out
}

// kind draws a submission's kind: an array is arrayTasks jobs, so it is
// drawn arrayTasks times less often than its share of the jobs.
func (w *workload) kind() Kind {
	perJob := func(k Kind) float64 {
		if k == KindArray {
			return arrayTasks
		}
		return 1
	}
	total := 0.0
	for _, m := range backlogMix {
		total += m.share / perJob(m.kind)
	}
	x := w.rng.Float64() * total
	for _, m := range backlogMix {
		if p := m.share / perJob(m.kind); x >= p {
			x -= p
			continue
		}
		if m.kind == KindQOS && w.qos == "" || m.kind == KindDep && len(w.deps) == 0 {
			return KindPlain
		}
		return m.kind
	}
	return KindPlain
}

// limits are the backlog's time limits.
var limits = []string{"00:30:00", "01:00:00", "02:00:00", "04:00:00", "12:00:00"}

func (w *workload) backlogJob(kind Kind, plugins bool) Job {
	gpus := w.phillyGPUs()
	args := w.common(limits[w.rng.IntN(len(limits))])
	j := Job{Kind: kind, Jobs: 1}
	switch kind {
	case KindGang:
		gpus = 16 << w.rng.IntN(2)
		if plugins {
			args = append(args, "--gang-topology=leaf:required")
		}
	case KindArray:
		gpus, j.Jobs = 1, arrayTasks
		args = append(args, fmt.Sprintf("--array=0-%d%%%d", arrayTasks-1, arrayThrottle))
	case KindHeld:
		args = append(args, "-H")
	case KindDep:
		args = append(args, "--dependency=afterok:"+w.deps[w.rng.IntN(len(w.deps))])
	case KindQOS:
		args = append(args, "--qos="+w.qos)
	}
	j.GPUs = gpus
	j.args = append(args, "--gpus="+strconv.Itoa(gpus), "--wrap", "exec sleep 7200")
	return j
}

func (w *workload) phillyGPUs() int {
	x := w.rng.Float64()
	for i, p := range philly.weight {
		if x < p {
			return philly.gpus[i]
		}
		x -= p
	}
	return 1
}

// held draws n held jobs of the Philly mix: the throughput phase's
// submissions (held, so that only the submission is measured).
func (w *workload) held(n int) []Job {
	out := make([]Job, n)
	for i := range out {
		g := w.phillyGPUs()
		out[i] = Job{Kind: KindHeld, GPUs: g, Jobs: 1, args: append(w.common("01:00:00"), "-H", "--gpus="+strconv.Itoa(g), "--wrap", "true")}
	}
	return out
}
