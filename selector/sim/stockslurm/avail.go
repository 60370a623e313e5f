package stockslurm

import (
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// params are the job_details fields slurmctld derives from a Job and the
// cluster (job_mgr.c, _job_test in cons_common/job_test.c).
type params struct {
	perJob        bool // gres_per_job (--gpus) rather than gres_per_node
	gres          int  // GPUs per job or per node; 0 for a CPU-only job
	share         int  // milli-GPUs of one GPU (gres/shard), 0 for whole GPUs
	minNodes      int
	maxNodes      int
	reqNodes      int
	cpusPerGres   int // --cpus-per-gpu, 0 if not given
	cpusPerTask   int
	minCPUs       int // details->min_cpus
	pnMinCPUs     int // details->pn_min_cpus
	minGresCPU    int // details->min_gres_cpu: CPUs one node needs for its GRES
	minJobGresCPU int // details->min_job_gres_cpu
	switches      int
	memPerGres    int64 // --mem-per-gpu equivalent of the job's memory
	memPerNode    int64 // for a CPU-only job
	models        topology.ModelSet
	anyModel      bool
}

func (m *Model) params(j *Job) params {
	p := params{perJob: j.GPUsPerNode == 0, gres: max(j.GPUsPerJob, j.GPUsPerNode), share: j.Share,
		cpusPerGres: j.CPUsPerGPU, cpusPerTask: max(j.CPUsPerTask, 1), switches: j.Switches}
	p.minNodes = max(j.MinNodes, 1)
	p.maxNodes = len(m.order)
	if j.MaxNodes > 0 {
		p.maxNodes = j.MaxNodes
	}
	p.reqNodes = p.minNodes
	tasks := 1
	if j.MinNodes > 0 {
		tasks = j.MinNodes // one task per node without -n
	}
	if p.cpusPerGres > 0 && p.gres > 0 {
		p.minGresCPU = p.cpusPerGres
		p.minJobGresCPU = p.cpusPerGres * p.gres
		if !p.perJob {
			p.minGresCPU = p.cpusPerGres * p.gres
			p.minJobGresCPU = p.minGresCPU * p.minNodes
		}
	}
	p.minCPUs = max(tasks*p.cpusPerTask, p.minJobGresCPU)
	p.pnMinCPUs = max(p.cpusPerTask, p.minGresCPU)
	if j.MemMiB > 0 && p.gres > 0 {
		p.memPerGres = (j.MemMiB + int64(j.gpus()) - 1) / int64(j.gpus())
		if p.share > 0 {
			p.memPerGres = j.MemMiB
		}
	} else if j.MemMiB > 0 {
		p.memPerNode = (j.MemMiB + int64(p.minNodes) - 1) / int64(p.minNodes)
	}
	p.anyModel = len(j.Models) == 0
	for _, name := range j.Models {
		if id, ok := m.c.ModelByName(name); ok {
			p.models = p.models.With(id)
		}
	}
	return p
}

// unknownCPUs stands for the free CPUs of a node whose CPU count the
// cluster does not say.
const unknownCPUs = 1 << 15

// nodeAvail is what can_job_run_on_node finds on one node: the GPUs the
// job could use, the free CPUs, and the scheduling weight it sets.
type nodeAvail struct {
	ok       bool
	free     []int  // usable GPUs (local indices, ascending)
	cnt      int    // sock_gres total_cnt: len(free), capped by memory
	cpus     int    // avail_cpus: whole free CPUs
	near     int    // near_gpu_cnt, capped at the job's per-node maximum
	weight   uint64 // sched_weight: Weight<<8 | (0xff - near)
	sockFree []int  // free cores per socket (nil without GPU affinity)
}

// gpus is the node's sock_gres total_cnt.
func (a *nodeAvail) gpus() int { return a.cnt }

// resCnt is avail_res_cnt, the size choose_nodes sorts nodes out by.
func (a *nodeAvail) resCnt() int { return a.cpus + a.cnt }

// nodeAvail evaluates Slurm node index i. Phases, as in
// can_job_run_on_node: GRES on the node (gres_sched_create_sock_gres_list),
// CPUs (common_allocate), the per-node task minimum, then
// gres_select_filter_remove_unusable, which also yields near_gpu_cnt, the
// low byte of the node's scheduling weight ("favor nodes with more
// co-located GPUs").
func (e *eval) nodeAvail(i int, a *nodeAvail) {
	id := e.m.order[i]
	node := &e.m.c.Nodes[id]
	*a = nodeAvail{}
	p := &e.p
	if !e.s.State[id].Usable() || !e.mask[i] {
		return
	}
	if p.gres > 0 && p.share == 0 && e.s.WholeFree(id) < max(1, p.gres*btoi(!p.perJob)) {
		return // a shortcut: too few whole free GPUs of any model
	}
	a.free = e.usableGPUs(node, e.gpuArena[node.GPULo:node.GPULo:node.GPUHi])
	a.cnt = len(a.free)
	if p.memPerGres > 0 {
		a.cnt = min(a.cnt, int(e.s.FreeMemMiB[id]/p.memPerGres)) // mem_per_gres caps total_cnt
	}
	if p.gres > 0 && (a.cnt == 0 || (!p.perJob && a.cnt < p.gres)) {
		return
	}
	a.cpus = int(e.s.FreeCPUMilli[id] / 1000)
	if node.CPUs == 0 {
		a.cpus = unknownCPUs // a cluster file without CPUs: not a limit
	}
	if e.s.FreeMemMiB[id] < p.memPerNode || a.cpus == 0 || a.cpus < p.cpusPerTask {
		return
	}
	maxNodeGres := p.gres
	if p.cpusPerGres > 0 && p.gres > 0 {
		mg := a.cpus / p.cpusPerGres
		if mg == 0 || (!p.perJob && p.gres > mg) {
			return
		}
		maxNodeGres = min(maxNodeGres, mg)
	}
	a.sockFree = e.socketFreeCores(i, id)
	a.near = min(e.nearGPUs(i, a), maxNodeGres, a.cnt)
	if p.share > 0 || p.gres == 0 || e.m.ablate&ablateWeightByte != 0 {
		a.near = 0 // shards and CPU-only jobs leave the weight byte at 0xff
	}
	a.weight = uint64(max(node.Weight, 0))<<8 | uint64(0xff-min(a.near, 0xff))
	a.ok = true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// usableGPUs lists the node's GPUs of an accepted model that are wholly
// free, or for a share, that have the share free.
func (e *eval) usableGPUs(node *topology.Node, out []int) []int {
	need := uint16(occupancy.WholeGPU)
	if e.p.share > 0 {
		need = uint16(e.p.share)
	}
	for g := 0; g < node.NumGPUs(); g++ {
		gid := node.GPU(g)
		if !e.p.anyModel && !e.p.models.Has(e.m.c.GPUs[gid].Model) {
			continue
		}
		if e.s.FreeMilli[gid] >= need {
			out = append(out, g)
		}
	}
	return out
}

// nearGPUs counts usable GPUs on sockets that still have a free core.
func (e *eval) nearGPUs(i int, a *nodeAvail) int {
	if a.sockFree == nil {
		return len(a.free)
	}
	n := 0
	for _, g := range a.free {
		if s := e.m.hw[i].gpuSock[g]; s < 0 || a.sockFree[s] > 0 {
			n++
		}
	}
	return n
}

// socketFreeCores estimates the free cores of each socket. A snapshot
// only knows a node's free CPUs, so the busy CPUs are charged to sockets
// in proportion to the busy GPUs bound to them: exact when, as in Slurm
// with Cores=, every job's cores sit on its GPUs' sockets.
func (e *eval) socketFreeCores(i int, id topology.NodeID) []int {
	hw := &e.m.hw[i]
	if hw.sockets < 2 || slices.Contains(hw.gpuSock, -1) {
		return nil
	}
	node := &e.m.c.Nodes[id]
	busyCPUs := (int64(node.CPUs)*1000 - int64(e.s.FreeCPUMilli[id]) + 999) / 1000
	var buf [16]int64
	busyGPUs := buf[:0]
	for range hw.sockets {
		busyGPUs = append(busyGPUs, 0)
	}
	var busy int64
	for g, s := range hw.gpuSock {
		if e.s.FreeMilli[node.GPU(g)] < occupancy.WholeGPU {
			busyGPUs[s]++
			busy++
		}
	}
	off := e.m.sockOff[i]
	free := e.sockArena[off : off+hw.sockets : off+hw.sockets]
	var charged int64
	for s := range free {
		var used int64
		switch {
		case busy > 0:
			used = (busyCPUs*busyGPUs[s] + busy/2) / busy
		default:
			used = busyCPUs / int64(hw.sockets)
		}
		if s == hw.sockets-1 {
			used = max(busyCPUs-charged, 0) // rounding remainder on the last socket
		}
		charged += used
		free[s] = max(hw.coresPerSock-int(used), 0)
	}
	return free
}
