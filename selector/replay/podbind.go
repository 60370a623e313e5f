package replay

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// bind binds one pending pod of job j to a free GPU.
func (p *podSim) bind(t float64, j int32) {
	pj := &p.pj[j]
	n := p.pickNode(pj)
	if n < 0 {
		p.fail(fmt.Errorf("%d GPUs counted free but none found", p.free))
		return
	}
	local := -1
	for i, m := range p.s.NodeFree(n) {
		if m == occupancy.WholeGPU {
			local = i
			break
		}
	}
	cpu := int32(p.cfg.CPUsPerGPU * 1000)
	pod := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: n, GPUs: []int{local}, Milli: occupancy.WholeGPU, CPUMilli: cpu}}}
	if err := p.s.Allocate(pod); err != nil {
		p.fail(err)
		return
	}
	p.hold(pj, n, local, cpu)
	if len(pj.held.Nodes) == 1 && len(pj.held.Nodes[0].GPUs) == 1 {
		pj.tgen++
		p.timeouts.push(keyed{at: t + p.cfg.RendezvousTimeout, job: j, gen: pj.tgen})
	}
	pj.pending--
	p.free--
	p.held++
}

// hold adds GPU local of node n to the job's allocation, GPUs ascending.
func (p *podSim) hold(pj *podJob, n topology.NodeID, local int, cpu int32) {
	for i := range pj.held.Nodes {
		na := &pj.held.Nodes[i]
		if na.Node != n {
			continue
		}
		k := len(na.GPUs)
		na.GPUs = append(na.GPUs, local)
		for ; k > 0 && na.GPUs[k-1] > local; k-- {
			na.GPUs[k] = na.GPUs[k-1]
		}
		na.GPUs[k] = local
		na.CPUMilli += cpu
		return
	}
	pj.held.Nodes = append(pj.held.Nodes, occupancy.NodeAlloc{Node: n, GPUs: []int{local}, Milli: occupancy.WholeGPU, CPUMilli: cpu})
}

// pickNode is the per-GPU greedy choice, kube-scheduler's default
// scoring for a pod: a node that already holds pods of the same job and
// has a free GPU (preferred pod affinity to the job's own pods, the usual
// setting for distributed training), else the node with the most free
// GPUs (NodeResourcesFit LeastAllocated, the default strategy; the pods
// ask for CPUs in proportion to GPUs, so least CPU allocated is most
// GPUs free), lowest node first on ties (kube breaks ties at random).
func (p *podSim) pickNode(pj *podJob) topology.NodeID {
	for _, na := range pj.held.Nodes {
		if p.s.WholeFree(na.Node) > 0 {
			return na.Node
		}
	}
	best, bestFree := topology.NodeID(-1), 0
	for i := range p.c.Nodes {
		n := topology.NodeID(i)
		if f := p.s.WholeFree(n); f > bestFree && p.s.State[n].Usable() {
			best, bestFree = n, f
		}
	}
	return best
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
	tier, nodes := Reach(p.c, pj.held)
	f := p.cfg.Slowdown.Factor(tier, nodes, minNodes(p.most, job.GPUs))
	o.Start, o.End = t, t+job.Duration*f
	o.Tier, o.Nodes, o.Slowdown = tier, nodes, f
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
		pj.pending = int32(p.jobs[e.job].GPUs)
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
// timeout: no GPU free, no job running, partial gangs holding GPUs.
func (p *podSim) checkDeadlock() {
	stuck := p.free == 0 && p.running == 0 && p.held > 0
	if stuck && !p.deadlocked {
		p.res.Deadlocks++
	}
	p.deadlocked = stuck
}
