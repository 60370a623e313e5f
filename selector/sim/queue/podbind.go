package queue

import (
	"fmt"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// bind binds one pending pod of job j to a node with room for it.
func (p *podSim) bind(t float64, j int32) {
	pj := &p.pj[j]
	n := p.pickNode(pj)
	if n < 0 {
		p.fail(fmt.Errorf("no node has room for a %d-GPU pod, %d GPUs free", pj.size, p.free))
		return
	}
	var gpus []int
	for i, m := range p.s.NodeFree(n) {
		if m == occupancy.WholeGPU && len(gpus) < pj.size {
			gpus = append(gpus, i)
		}
	}
	cpu := int32(p.cfg.CPUsPerGPU * 1000 * pj.size)
	pod := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n, GPUs: gpus, Milli: occupancy.WholeGPU, CPUMilli: cpu}}}
	if err := p.s.Allocate(pod); err != nil {
		p.fail(err)
		return
	}
	first := len(pj.held.Nodes) == 0
	p.hold(pj, pod.Nodes[0])
	if first && pj.size < p.jobs[j].GPUs {
		pj.tgen++
		p.timeouts.push(keyed{at: t + p.cfg.RendezvousTimeout, job: j, gen: pj.tgen})
	}
	p.setPending(pj, pj.pending-1)
	p.free -= pj.size
	p.held += pj.size
}

// hold adds a bound pod's GPUs to the job's allocation, GPUs ascending.
func (p *podSim) hold(pj *podJob, pod occupancy.NodeAlloc) {
	for i := range pj.held.Nodes {
		na := &pj.held.Nodes[i]
		if na.Node != pod.Node {
			continue
		}
		na.GPUs = append(na.GPUs, pod.GPUs...)
		slices.Sort(na.GPUs)
		na.CPUMilli += pod.CPUMilli
		return
	}
	pod.GPUs = slices.Clone(pod.GPUs)
	pj.held.Nodes = append(pj.held.Nodes, pod)
}

// pickNode is kube-scheduler's default choice for a pod: a node that
// already holds pods of the same job and has room (preferred pod affinity
// to the job's own pods, the usual setting for distributed training),
// else the node with the most free GPUs (NodeResourcesFit
// LeastAllocated, the default strategy; pods ask for CPUs in proportion
// to GPUs, so least CPU allocated is most GPUs free), lowest node first on
// ties (kube breaks ties at random). -1 when no node has room.
func (p *podSim) pickNode(pj *podJob) topology.NodeID {
	for _, na := range pj.held.Nodes {
		if p.room(na.Node) >= pj.size {
			return na.Node
		}
	}
	best, bestFree := topology.NodeID(-1), pj.size-1
	for i := range p.c.Nodes {
		n := topology.NodeID(i)
		if f := p.room(n); f > bestFree && p.s.State[n].Usable() {
			best, bestFree = n, f
		}
	}
	return best
}

// room is how many GPUs' pods node n can take now: its whole free GPUs,
// at most as many as its free CPUs serve at CPUsPerGPU each (with many
// CPUs per GPU the CPUs run out first).
func (p *podSim) room(n topology.NodeID) int {
	return min(p.s.WholeFree(n), int(p.s.FreeCPUMilli[n])/max(p.cfg.CPUsPerGPU*1000, 1))
}

// startJob starts a job whose pods are all bound.
func (p *podSim) startJob(t float64, j int32) {
	pj, job, o := &p.pj[j], &p.jobs[j], &p.out[j]
	pj.running = true
	pj.tgen++
	p.held -= job.GPUs
	p.running++
	if job.GPUs >= 2 {
		o.Feasible = p.feasibleFor(pj.held, job.GPUs)
	}
	f, tier, nodes := p.slow.factor(job, pj.held)
	o.Start, o.End = t, t+job.Duration*f
	o.Tier, o.Nodes, o.Slowdown = tier, nodes, f
	if p.cfg.RecordUse {
		o.Used = usedBy(pj.held) // the pods bound before the start count from it
	}
	p.ends.push(o.End, j)
}

// feasibleFor is the tightest tier that could have held the job now,
// counting the GPUs it holds as free to it.
func (p *podSim) feasibleFor(a occupancy.Allocation, gpus int) topology.Tier {
	if err := p.s.Release(a); err != nil {
		p.fail(err)
		return 0
	}
	t := p.feas.tightest(p.s, gpus)
	if err := p.s.Allocate(a); err != nil {
		p.fail(err)
	}
	return t
}

// endsAt finishes the jobs ending at t and reports whether any did.
func (p *podSim) endsAt(t float64) bool {
	any := false
	for at, ok := p.ends.next(); ok && at == t; at, ok = p.ends.next() {
		j := p.ends.pop().job
		pj := &p.pj[j]
		p.releaseHeld(pj)
		pj.running = false
		p.running--
		p.jobDone()
		any = true
	}
	return any
}

// timeoutsAt restarts the partial gangs whose rendezvous timed out at t:
// their pods are deleted (GPUs released) and created anew.
func (p *podSim) timeoutsAt(t float64) bool {
	any := false
	for p.timeouts.due(t) {
		e := p.timeouts.pop()
		pj := &p.pj[e.job]
		if e.gen != pj.tgen || pj.running {
			continue
		}
		k := len(pj.held.Nodes)
		held := pj.held.NumGPUs()
		p.releaseHeld(pj)
		p.held -= held
		p.res.Timeouts++
		p.out[e.job].Restarts++
		p.setPending(pj, int32(p.jobs[e.job].GPUs/pj.size))
		p.enqueue(t, e.job)
		any = any || k > 0
	}
	return any
}

// releaseHeld gives back every GPU a job holds.
func (p *podSim) releaseHeld(pj *podJob) {
	if err := p.s.Release(pj.held); err != nil {
		p.fail(err)
	}
	p.free += pj.held.NumGPUs()
	pj.held = occupancy.Allocation{}
}

// checkDeadlock counts the episodes in which nothing can move but a
// timeout: no job running, partial gangs holding GPUs, and no pending pod
// small enough for the free GPUs of any node.
func (p *podSim) checkDeadlock() {
	stuck := p.running == 0 && p.held > 0
	if stuck {
		room := p.largestFree()
		for size := 1; size <= min(room, p.most); size++ {
			stuck = stuck && p.pendingBySize[size] == 0
		}
	}
	if stuck && !p.deadlocked {
		p.res.Deadlocks++
	}
	p.deadlocked = stuck
}
