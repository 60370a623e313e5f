package queue

import (
	"fmt"
	"math"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// NaivePods is the name of the pod-by-pod policy.
const NaivePods = "naive-pods"

// ReplayPods replays the jobs as Kubernetes would run them without gang
// scheduling: a job that fits one server (at most OneNodeUpTo GPUs) is one
// pod holding all its GPUs, which the device plugin allocates on one node
// at once; a bigger job is G one-GPU pods that the scheduler binds one at a
// time, per GPU, and the job runs only once all of them are bound.
//
// What is modelled, after kube-scheduler v1.2x with its default queue:
//
//   - At submit a job's pods enter the active queue, ordered by the time
//     they were queued (then creation order).
//   - A pod binds to a node with enough free GPUs (see pickNode). There is
//     no gang: a bound pod holds its GPUs, idle, until every pod of its
//     job is bound and the job has run, which is how partial gangs hold
//     GPUs that nobody uses.
//   - A pod that finds no room is unschedulable: its attempts count goes
//     up and its back-off becomes 1 s doubling to 10 s. Unschedulable pods
//     are moved back when GPUs are released (a pod deleted): those whose
//     back-off has run out go to the active queue at once, the others when
//     it runs out; their queue time is that of their last failure, so pods
//     submitted meanwhile and never tried go first.
//   - Rendezvous timeout: a job whose pods are not all bound
//     RendezvousTimeout seconds after its first pod was bound fails (the
//     workers give up waiting for each other); the training operator
//     deletes its pods and creates new ones, which queue afresh. That is
//     the kindest recovery Kubernetes offers; with container restarts in
//     place the pods would keep their GPUs and a deadlock would last
//     forever.
//   - Deadlock: no job running, partial gangs holding GPUs, and no pending
//     pod that fits the free GPUs, so only a timeout can make progress.
//     Each such episode is counted.
//
// Scheduling takes no time and pods of one job are handled together (they
// share a queue time and an attempts count, exactly as in the real queue
// when they are created together).
func ReplayPods(c *topology.Cluster, jobs []Job, cfg Config) (*Result, error) {
	cfg = cfg.Defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkJobs(jobs); err != nil {
		return nil, err
	}
	p := newPodSim(c, jobs, cfg)
	return p.run()
}

// podJob is one job's pods.
type podJob struct {
	size    int   // GPUs per pod: all of them, or 1
	pending int32 // pods not bound
	group   int32 // current pod group in the queue (-1: none)
	tgen    int32 // bumped when its timeout entry goes stale
	held    occupancy.Allocation
	running bool
}

// podSim is the state of a naive-pods replay.
type podSim struct {
	c    *topology.Cluster
	jobs []Job
	cfg  Config
	s    *occupancy.Snapshot
	res  *Result
	out  []Outcome
	pj   []podJob

	q        podQueue
	timeouts keyHeap // rendezvous deadlines
	ends     endHeap

	free, running, held int     // free GPUs, running jobs, GPUs held by partial gangs
	pendingBySize       []int   // pending pods by GPUs per pod
	last                float64 // time of the previous event, for integrals
	deadlocked          bool
	feas                *feasibility
	most                int // GPUs of the largest node
	mostPod             int // GPUs of the largest pod a node can ever hold, CPUs counted
	slow                slower
	done                int
	err                 error
}

func newPodSim(c *topology.Cluster, jobs []Job, cfg Config) *podSim {
	p := &podSim{c: c, jobs: jobs, cfg: cfg, s: occupancy.New(c), res: newResult(NaivePods, c, jobs),
		pj: make([]podJob, len(jobs)), free: c.NumGPUs(), feas: newFeasibility(c)}
	p.out = p.res.Outcomes
	p.most, p.mostPod = mostGPUs(c), mostGPUs(c)
	if cpus := cfg.CPUsPerGPU; cpus > 0 {
		p.mostPod = min(p.most, mostCPUs(c)/cpus)
	}
	p.slow = newSlower(c, &p.cfg)
	p.pendingBySize = make([]int, p.most+1)
	if len(jobs) > 0 {
		p.last = jobs[0].Submit
	}
	return p
}

func (p *podSim) run() (*Result, error) {
	next, n := 0, len(p.jobs)
	for p.err == nil {
		t, ok := p.nextEvent(next)
		if !ok {
			break
		}
		p.account(t)
		released := p.endsAt(t)
		released = p.timeoutsAt(t) || released
		if released {
			p.q.release(t)
		}
		for ; next < n && p.jobs[next].Submit == t; next++ {
			p.submit(t, int32(next))
		}
		p.q.flush(t)
		p.schedule(t)
		p.checkDeadlock()
		p.res.PeakHeldIdle = max(p.res.PeakHeldIdle, p.held)
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.held > 0 || p.done < len(p.jobs) {
		return nil, fmt.Errorf("replay of %s: %d jobs never ran, %d GPUs still held by partial gangs", NaivePods, len(p.jobs)-p.done, p.held)
	}
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.done, len(p.jobs))
	}
	return p.res, nil
}

// nextEvent is the earliest pending event time, or false when none is left.
func (p *podSim) nextEvent(next int) (float64, bool) {
	t := math.Inf(1)
	if next < len(p.jobs) {
		t = p.jobs[next].Submit
	}
	if at, ok := p.q.nextRetry(); ok {
		t = min(t, at)
	}
	if at, ok := p.timeouts.next(); ok {
		t = min(t, at)
	}
	if at, ok := p.ends.next(); ok {
		t = min(t, at)
	}
	return t, !math.IsInf(t, 1)
}

// account integrates the GPUs held idle by partial gangs up to t.
func (p *podSim) account(t float64) {
	p.res.HeldIdleGPUSeconds += float64(p.held) * (t - p.last)
	p.last = t
}

// submit creates a job's pods, or rejects a job that can never run: a
// one-pod job larger than every node, a job larger than the cluster, a pod
// whose CPUs no node has.
func (p *podSim) submit(t float64, j int32) {
	gpus := p.jobs[j].GPUs
	pj := &p.pj[j]
	pj.size = 1
	if gpus <= p.cfg.OneNodeUpTo {
		pj.size = gpus
	}
	if gpus > p.c.NumGPUs() || pj.size > p.mostPod {
		p.out[j].Rejected = true
		p.jobDone()
		return
	}
	p.setPending(pj, int32(gpus/pj.size))
	p.enqueue(t, j)
}

// setPending sets a job's pending pods, keeping the count by size.
func (p *podSim) setPending(pj *podJob, n int32) {
	p.pendingBySize[pj.size] += int(n - pj.pending)
	pj.pending = n
}

// enqueue creates job j's pending pods at t: a new pod group in a new
// active cohort (new pods are tried at once).
func (p *podSim) enqueue(t float64, j int32) {
	g := p.q.newGroup(j)
	p.pj[j].group = g
	c := p.q.newCohort(t, 0)
	p.q.push(c, g, p.pj[j].size)
	p.q.active = append(p.q.active, c)
}

// schedule tries the active cohorts in queue order: pods bind while a
// node has room for them; a pod group that finds none becomes
// unschedulable, and once no pod of a cohort can fit, the rest of it too.
func (p *podSim) schedule(t float64) {
	q := &p.q
	q.sortActive()
	room := p.largestFree()
	for _, c := range q.active {
		for c.head >= 0 && room >= c.minPod && p.err == nil {
			g := q.pop(c)
			j := q.job[g]
			pj := &p.pj[j]
			if pj.group != g {
				continue // its pods were deleted (rendezvous timeout)
			}
			for pj.pending > 0 && room >= pj.size && p.err == nil {
				p.bind(t, j)
				room = p.largestFree()
			}
			if pj.pending == 0 {
				pj.group = -1
				p.startJob(t, j)
				continue
			}
			one := q.newCohort(t, c.attempts)
			q.push(one, g, pj.size)
			q.fail(one, t)
		}
		if c.head >= 0 {
			q.fail(c, t)
		}
	}
	clear(q.active)
	q.active = q.active[:0]
}

// largestFree is the most GPUs' pods one usable node can take now
// (room: whole free GPUs and the CPUs they need).
func (p *podSim) largestFree() int {
	most := 0
	for i := range p.c.Nodes {
		if n := topology.NodeID(i); p.s.State[n].Usable() {
			most = max(most, p.room(n))
		}
	}
	return most
}

func (p *podSim) jobDone() {
	p.done++
	if p.cfg.Progress != nil && p.done%4096 == 0 {
		p.cfg.Progress(p.done, len(p.jobs))
	}
}

func (p *podSim) fail(err error) {
	if p.err == nil {
		p.err = fmt.Errorf("replay of %s: %w", NaivePods, err)
	}
}
