package slurmstate

import (
	"fmt"
	"slices"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// BuildSnapshot turns one poll of Slurm into an occupancy snapshot of
// cluster c, taken at time at.
//
// Slurm's outputs come from separate RPCs a few milliseconds apart, so a job
// may start or end between the node listing and the job listing. The builder
// never guesses in the optimistic direction: per node it takes the union of
// what the sources say is busy.
//
//  1. GPUs: busy if the node's GresUsed lists the index, or a holding job's
//     GRES detail does; shards a job holds take their share of the GPU. If
//     Slurm counts more GPUs in use than the indices explain (untyped GRES
//     without device files print no indices), the lowest free indices are
//     marked busy and the node is reported (UnattributedGPUs). GPUs the
//     topology has but Slurm does not are marked busy: Slurm never hands
//     them out.
//  2. CPUs and memory: capacity is the smaller of Slurm's and the
//     topology's; in use is the larger of the node's own count and the sum
//     over its jobs.
//  3. State: Slurm's, mapped by MapState. Topology nodes Slurm does not
//     report get state unknown (the engine does not use them).
//  4. Jobs are recorded with their per-node GPUs, CPUs and memory, for
//     reports and `gangtopo why`; the free capacity does not depend on them
//     beyond step 1 and 2.
//  5. The pending jobs gangtopo bound (squeue --json only) give the
//     snapshot's bindings (Bindings), for the plugin's job_modify, and
//     the holds their decisions name (PendingHolds), for the plugin's
//     held decisions.
//
// Jobs read from scontrol's text (Job.FromText) are the exception: users'
// job names and comments are printed there unescaped and can forge Slurm's
// lines, so such a job takes no part in steps 1 and 2 (the node's own
// counts, which users cannot write, decide what is busy; shards are then
// not counted and a job started between the two RPCs shows a cycle late),
// and it is recorded in step 4 only if its node confirms every GPU it
// claims and its CPUs and memory fit what the node has allocated. Jobs
// left out and records that did not parse are reported.
//
// Every disagreement with the topology goes into the Report.
func BuildSnapshot(c *topology.Cluster, st *State, at time.Time, featurePrefix string) (*occupancy.Snapshot, Report, error) {
	var rep Report
	s := occupancy.New(c)
	s.Time = at
	s.Features = make([][]string, len(c.Nodes))
	bound, err := boundFeatures(c, featurePrefix)
	if err != nil {
		return nil, rep, err
	}
	onNode := jobsByNode(c, st.Jobs, &rep)
	slurm := make(map[string]*Node, len(st.Nodes))
	for i := range st.Nodes {
		n := &st.Nodes[i]
		slurm[n.Name] = n
		if _, ok := c.NodeByName(n.Name); !ok {
			rep.add(NotInTopology, n.Name, "")
		}
	}
	for i := range c.Nodes {
		tn := &c.Nodes[i]
		id := topology.NodeID(i)
		sn, ok := slurm[tn.Name]
		if !ok {
			rep.add(NotInSlurm, tn.Name, "")
			s.SetState(id, occupancy.StateUnknown)
			continue
		}
		compareNode(c, tn, sn, &rep)
		s.Features[id] = sn.Features
		if bound != nil {
			compareFeatures(c, featurePrefix, bound[id], sn.Features, tn.Name, &rep)
		}
		u := nodeUsage(tn, sn, onNode[id], &rep)
		if err := s.Allocate(u.allocation(id)); err != nil {
			return nil, rep, fmt.Errorf("node %s: %w", tn.Name, err) // cannot happen: usage is capped at capacity
		}
		s.SetState(id, sn.State)
	}
	s.Jobs = snapshotJobs(c, st.Jobs, slurm, &rep)
	for _, u := range st.Unreadable {
		rep.add(JobUnreadable, "", "%s", u)
	}
	if featurePrefix != "" {
		s.Bindings = Bindings(st.Pending, featurePrefix) // step 5
	}
	if st.PendingListed {
		s.PendingHolds = PendingHolds(st.Pending)
	}
	return s, rep, nil
}

// jobsByNode indexes the holding jobs' node shares by NodeID.
func jobsByNode(c *topology.Cluster, jobs []Job, rep *Report) [][]*JobNode {
	out := make([][]*JobNode, len(c.Nodes))
	for ji := range jobs {
		j := &jobs[ji]
		if j.FromText {
			continue // not trusted with capacity; see BuildSnapshot
		}
		for k := range j.Nodes {
			jn := &j.Nodes[k]
			id, ok := c.NodeByName(jn.Name)
			if !ok {
				rep.add(JobOffTopology, jn.Name, "job %s", j.ID)
				continue
			}
			out[id] = append(out[id], jn)
		}
	}
	return out
}

// compareNode reports where Slurm's node differs from the topology's.
func compareNode(c *topology.Cluster, tn *topology.Node, sn *Node, rep *Report) {
	if sn.GPUs != tn.NumGPUs() {
		rep.add(GPUCountDiffers, tn.Name, "Slurm %d, topology %d", sn.GPUs, tn.NumGPUs())
	}
	for _, typ := range sn.GPUTypes {
		if m, ok := c.ModelByName(typ); !ok || !tn.Models.Has(m) {
			rep.add(GPUModelDiffers, tn.Name, "Slurm %s, topology %v", typ, c.ModelNames(tn.Models))
		}
	}
	if sn.CPUs != tn.CPUs {
		rep.add(CPUCountDiffers, tn.Name, "Slurm %d, topology %d", sn.CPUs, tn.CPUs)
	}
	if sn.MemoryMiB != tn.MemoryMiB {
		rep.add(MemoryDiffers, tn.Name, "Slurm %d MiB, topology %d MiB", sn.MemoryMiB, tn.MemoryMiB)
	}
}

// usage is what is taken on one node.
type usage struct {
	gpuMilli []uint16 // by local GPU index
	cpuMilli int32
	memMiB   int64
}

// nodeUsage combines the node's own counts with its jobs' (steps 1 and 2).
func nodeUsage(tn *topology.Node, sn *Node, jobs []*JobNode, rep *Report) usage {
	k := tn.NumGPUs()
	u := usage{gpuMilli: make([]uint16, k)}
	busy := make([]bool, k) // whole GPUs Slurm's gpu GRES holds
	mark := func(idx int, what string) {
		if idx >= k {
			rep.add(JobOffTopology, tn.Name, "%s holds GPU index %d, topology has %d GPUs", what, idx, k)
			return
		}
		busy[idx] = true
	}
	for _, g := range sn.GPUUsedIdx {
		mark(g, "GresUsed")
	}
	cpus, mem := 0, int64(0)
	for _, jn := range jobs {
		for _, g := range jn.GPUs {
			mark(g, "a job")
		}
		u.addShards(jn.Shards, sn.ShardsPerGPU)
		cpus += jobCPUs(jn, sn)
		mem += jn.MemMiB
	}
	attributeRest(busy, sn, rep, tn.Name)
	for g := range busy {
		if busy[g] || g >= sn.GPUs {
			u.gpuMilli[g] = occupancy.WholeGPU
		}
	}
	capCPUs := min(tn.CPUs, sn.CPUs)
	cpus = max(cpus, sn.AllocCPUs)
	u.cpuMilli = int32(min(tn.CPUs*1000, 1<<31-1) - max(capCPUs-cpus, 0)*1000)
	capMem := min(tn.MemoryMiB, sn.MemoryMiB)
	u.memMiB = tn.MemoryMiB - max(capMem-max(mem, sn.AllocMiB), 0)
	return u
}

// jobCPUs is a job's CPUs on a node: scontrol's CPU count, or squeue's
// cores times the node's threads per core.
func jobCPUs(jn *JobNode, sn *Node) int {
	if jn.CPUs > 0 {
		return jn.CPUs
	}
	return jn.Cores * max(sn.Threads, 1)
}

// addShards takes each GPU's share for the shards jobs hold on it.
func (u *usage) addShards(shards map[int]int, perGPU int) {
	for g, n := range shards {
		if g < 0 || g >= len(u.gpuMilli) {
			continue
		}
		m := occupancy.WholeGPU // shards on a node that declares none: take the GPU
		if perGPU > 0 {
			m = min((n*occupancy.WholeGPU+perGPU-1)/perGPU, occupancy.WholeGPU)
		}
		u.gpuMilli[g] = uint16(min(int(u.gpuMilli[g])+m, occupancy.WholeGPU))
	}
}

// attributeRest marks busy the GPUs Slurm counts as used but no index
// explains, lowest free index first, and reports them.
func attributeRest(busy []bool, sn *Node, rep *Report, name string) {
	n := 0
	for _, b := range busy {
		if b {
			n++
		}
	}
	missing := sn.GPUsUsed - n
	if missing <= 0 {
		return
	}
	if sn.UsedIdxKnown || n > 0 {
		rep.add(UnattributedGPUs, name, "Slurm counts %d in use, indices explain %d; the lowest free marked busy", sn.GPUsUsed, n)
	} else { // GPUs bound to no device file: Slurm itself keeps no indices
		rep.add(UnattributedGPUs, name, "Slurm printed no GPU indices; the lowest %d marked busy", missing)
	}
	for g := 0; g < len(busy) && missing > 0; g++ {
		if !busy[g] {
			busy[g] = true
			missing--
		}
	}
}

// allocation expresses the usage as one Allocation (one NodeAlloc per
// distinct GPU share).
func (u usage) allocation(id topology.NodeID) occupancy.Allocation {
	byMilli := map[uint16][]int{}
	var order []uint16
	for g, m := range u.gpuMilli {
		if m == 0 {
			continue
		}
		if _, ok := byMilli[m]; !ok {
			order = append(order, m)
		}
		byMilli[m] = append(byMilli[m], g)
	}
	a := occupancy.Allocation{Nodes: []occupancy.NodeAlloc{{Node: id, CPUMilli: u.cpuMilli, MemMiB: u.memMiB}}}
	for _, m := range order {
		a.Nodes = append(a.Nodes, occupancy.NodeAlloc{Node: id, GPUs: byMilli[m], Milli: m})
	}
	return a
}

// snapshotJobs converts the holding jobs, keeping only what the topology
// can express (the rest was reported by jobsByNode and nodeUsage) and,
// for jobs read from scontrol's text, only jobs their nodes confirm.
func snapshotJobs(c *topology.Cluster, jobs []Job, slurm map[string]*Node, rep *Report) []occupancy.Job {
	out := make([]occupancy.Job, 0, len(jobs))
	for _, j := range jobs {
		if j.FromText && !confirmed(c, &j, slurm, rep) {
			continue
		}
		oj := occupancy.Job{ID: j.ID, User: j.User, Partition: j.Partition, Request: j.GangTopology, Models: j.Models}
		for k := range j.Nodes {
			jn := &j.Nodes[k]
			id, ok := c.NodeByName(jn.Name)
			if !ok {
				continue
			}
			cpus := jn.CPUs
			if sn := slurm[jn.Name]; sn != nil {
				cpus = jobCPUs(jn, sn)
			}
			na := occupancy.NodeAlloc{Node: id, Milli: occupancy.WholeGPU, CPUMilli: int32(min(cpus, 1<<21) * 1000), MemMiB: jn.MemMiB}
			for _, g := range jn.GPUs {
				if g < c.Nodes[id].NumGPUs() {
					na.GPUs = append(na.GPUs, g)
				}
			}
			oj.Alloc.Nodes = append(oj.Alloc.Nodes, na)
		}
		out = append(out, oj)
	}
	return out
}

// confirmed checks a job read from scontrol's text against its nodes as
// Slurm reports them: each node exists, shows every GPU the job claims in
// use (by index when Slurm prints indices, else by count), and has at
// least the job's CPUs and memory allocated. A node the topology lacks is
// reported as for any job. It reports the first claim that fails.
func confirmed(c *topology.Cluster, j *Job, slurm map[string]*Node, rep *Report) bool {
	for k := range j.Nodes {
		jn := &j.Nodes[k]
		if _, ok := c.NodeByName(jn.Name); !ok {
			rep.add(JobOffTopology, jn.Name, "job %s", j.ID)
			continue
		}
		sn := slurm[jn.Name]
		why := ""
		switch {
		case sn == nil:
			why = "Slurm does not list the node"
		case sn.UsedIdxKnown && !subset(jn.GPUs, sn.GPUUsedIdx):
			why = fmt.Sprintf("GPUs %v, in use there: %v", jn.GPUs, sn.GPUUsedIdx)
		case max(len(jn.GPUs), jn.GPUCount) > sn.GPUsUsed:
			why = fmt.Sprintf("%d GPUs, %d in use there", max(len(jn.GPUs), jn.GPUCount), sn.GPUsUsed)
		case jobCPUs(jn, sn) > sn.AllocCPUs:
			why = fmt.Sprintf("%d CPUs, %d allocated there", jobCPUs(jn, sn), sn.AllocCPUs)
		case jn.MemMiB > sn.AllocMiB:
			why = fmt.Sprintf("%d MiB, %d MiB allocated there", jn.MemMiB, sn.AllocMiB)
		}
		if why != "" {
			rep.add(JobNotConfirmed, jn.Name, "job %s claims %s", j.ID, why)
			return false
		}
	}
	return true
}

func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
