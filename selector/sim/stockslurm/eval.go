package stockslurm

import (
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// eval is one job's trip through select/cons_tres: the per-node
// availability, and the counters of the current node-selection pass
// (_eval_nodes or _eval_nodes_topo), named after their C counterparts.
type eval struct {
	m   *Model
	s   *occupancy.Snapshot
	job *Job
	p   params
	av  []nodeAvail // by Slurm node index
	// mask says which nodes the job may use at all (by Slurm index):
	// partitions, node lists, the constraint's node set.
	mask []bool

	availCPU  []int    // avail_cpu_per_node
	reqSock   [][]bool // sockets the job's cores may use on a node (nil: all)
	chosen    []bool   // node_map: the nodes taken so far
	jobCPUs   []int    // CPUs the job gets on a taken node (_cpus_to_use)
	gresOn    []int    // GPUs counted on a taken node (gres_sched_add)
	totalGres int      // gres_js->total_gres

	remNodes, minRemNodes, maxNodes int
	remCPUs, remMaxCPUs             int

	// scratch backing the per-node slices above, so that a decision
	// allocates (almost) nothing once the pool is warm
	gpuArena  []int  // by GPUID: nodeAvail.free
	sockArena []int  // by Model.sockOff: nodeAvail.sockFree
	reqArena  []bool // by Model.sockOff: reqSock
	swArena   []int  // switch node lists of evalTopo
	grpArena  []int  // weight group node lists of evalTopo
	sets      []consecSet
}

// newEval takes scratch space from the model's pool and evaluates every
// node for j. Give it back with release.
func (m *Model) newEval(s *occupancy.Snapshot, j *Job, mask []bool) *eval {
	e, _ := m.pool.Get().(*eval)
	if e == nil {
		n := len(m.order)
		e = &eval{m: m, av: make([]nodeAvail, n), availCPU: make([]int, n), reqSock: make([][]bool, n),
			chosen: make([]bool, n), jobCPUs: make([]int, n), gresOn: make([]int, n),
			gpuArena: make([]int, len(m.c.GPUs)), sockArena: make([]int, m.sockTotal),
			reqArena: make([]bool, m.sockTotal)}
	}
	e.s, e.job, e.p, e.mask = s, j, m.params(j), mask
	for i := range e.av {
		e.nodeAvail(i, &e.av[i])
	}
	return e
}

func (e *eval) release() {
	e.s, e.job, e.mask = nil, nil, nil
	e.m.pool.Put(e)
}

// gresPerJob is the C flag of the same name: the job counts GPUs per job.
func (e *eval) gresPerJob() bool { return e.p.perJob && e.p.gres > 0 }

// begin resets the counters at the start of a selection pass.
func (e *eval) begin() {
	p := &e.p
	e.remCPUs, e.minRemNodes, e.maxNodes = p.minCPUs, p.minNodes, p.maxNodes
	e.remNodes = max(p.minNodes, p.reqNodes)
	if e.gresPerJob() {
		e.remNodes = min(p.minNodes, p.reqNodes)
	}
	e.remMaxCPUs = max(p.minCPUs, p.minGresCPU*e.remNodes, p.minJobGresCPU) // _get_rem_max_cpus
	e.totalGres = 0
	clear(e.availCPU)
	clear(e.chosen)
	clear(e.jobCPUs)
	clear(e.gresOn)
	clear(e.reqSock)
}

// take adds node i to the allocation with the bookkeeping every loop of
// _eval_nodes_topo and _eval_nodes repeats: _cpus_to_use, gres_sched_add,
// then the remaining node, CPU and GRES counters.
func (e *eval) take(i int) {
	cpus := e.cpusToUse(e.availCPU[i])
	e.jobCPUs[i] = cpus
	if e.gresPerJob() {
		cpus = e.gresSchedAdd(i, cpus)
	}
	e.remNodes--
	e.minRemNodes--
	e.maxNodes--
	e.remCPUs -= cpus
	e.remMaxCPUs -= cpus
	e.chosen[i] = true
}

// done is the loops' exit test: enough nodes, CPUs and GPUs.
func (e *eval) done() bool {
	return e.remNodes <= 0 && e.remCPUs <= 0 && e.gresTest()
}

// gresTest is gres_sched_test: the per-job GPU count is reached.
func (e *eval) gresTest() bool { return !e.gresPerJob() || e.totalGres >= e.p.gres }

// gresSufficient is gres_sched_sufficient: would extra GPUs reach the count.
func (e *eval) gresSufficient(extra int) bool {
	return !e.gresPerJob() || e.totalGres+extra >= e.p.gres
}

// cpusToUse is _cpus_to_use: keep CPUs back for the nodes still to come.
func (e *eval) cpusToUse(avail int) int {
	limit := e.remMaxCPUs - max(e.minRemNodes-1, 0)
	if avail > limit {
		avail = max(limit, e.p.pnMinCPUs, e.p.minGresCPU)
	}
	return avail
}

// gresSchedAdd is gres_sched_add: count the node's GPUs towards the job,
// as many as its CPUs allow with --cpus-per-gpu.
func (e *eval) gresSchedAdd(i, cpus int) int {
	if cpus == 0 {
		return cpus
	}
	limit := e.av[i].gpus()
	if c := e.p.cpusPerGres; c > 0 {
		limit = min(cpus/c, limit)
		if limit > 0 {
			cpus = limit * c
		}
	}
	e.gresOn[i] = limit
	e.totalGres += limit
	return cpus
}

// enoughNodes is _enough_nodes.
func (e *eval) enoughNodes(avail, rem int) bool {
	need := rem
	if e.p.reqNodes > e.p.minNodes {
		need = rem + e.p.minNodes - e.p.reqNodes
	}
	return avail >= need
}

// selectCores is _select_cores with gres_select_filter_sock_core: the CPUs
// node i offers, 0 when it cannot hold its part. On nodes with GPU socket
// affinity the first pass keeps only the sockets needed for the GPUs,
// richest in free cores first, and records them for the GPU pick.
func (e *eval) selectCores(i int, firstPass bool) int {
	a := &e.av[i]
	p := &e.p
	if p.gres == 0 {
		return a.cpus
	}
	if a.sockFree == nil {
		cnt := a.gpus()
		if p.cpusPerGres > 0 {
			cnt = min(cnt, a.cpus/p.cpusPerGres)
		}
		if cnt == 0 || (!p.perJob && p.gres > cnt) {
			return 0
		}
		return a.cpus
	}
	return e.selectSockets(i, firstPass)
}

// selectSockets is the socket part of gres_select_filter_sock_core: take
// sockets, most free cores first, until their GPUs cover the job's share
// of the node; on the first pass the other sockets' cores are dropped.
func (e *eval) selectSockets(i int, firstPass bool) int {
	a := &e.av[i]
	p := &e.p
	maxGres := p.gres
	if p.perJob {
		maxGres = min(p.gres-e.totalGres, p.gres)
	}
	if p.cpusPerGres > 0 {
		maxGres = min(maxGres, a.cpus/p.cpusPerGres)
	}
	off, n := e.m.sockOff[i], e.m.hw[i].sockets
	req := e.reqArena[off : off+n : off+n]
	clear(req)
	total, sufficient, cpus := 0, false, a.cpus
	for _, s := range e.socketOrder(i) {
		cnt := e.socketGPUs(i, s, firstPass)
		if cnt == 0 || (firstPass && a.sockFree[s] == 0) {
			continue // no usable GPU here: its cores are dropped
		}
		total += cnt
		if !sufficient {
			req[s] = true
		}
		sufficient = total >= maxGres
	}
	if p.cpusPerGres > 0 {
		total = min(total, cpus/p.cpusPerGres)
	}
	if total == 0 || (!p.perJob && p.gres > total) {
		return 0
	}
	if firstPass {
		kept := 0
		for s, r := range req {
			if r {
				kept += a.sockFree[s]
			}
		}
		cpus = min(cpus, kept)
	}
	e.reqSock[i] = req
	return cpus
}

// socketOrder lists node i's sockets, most free cores first (stable).
func (e *eval) socketOrder(i int) []int {
	order := make([]int, 0, 16)
	for s := 0; s < e.m.hw[i].sockets; s++ {
		order = append(order, s)
	}
	if e.m.ablate&ablateSocketOrder == 0 {
		free := e.av[i].sockFree
		slices.SortStableFunc(order, func(x, y int) int { return free[y] - free[x] })
	}
	return order
}

// socketGPUs counts the usable GPUs of socket s, on the first pass no
// more than its free cores can feed with --cpus-per-gpu.
func (e *eval) socketGPUs(i, s int, firstPass bool) int {
	a := &e.av[i]
	cnt := 0
	for _, g := range a.free {
		if e.m.hw[i].gpuSock[g] == s {
			cnt++
		}
	}
	if firstPass && e.p.cpusPerGres > 0 {
		cnt = min(cnt, a.sockFree[s]/e.p.cpusPerGres)
	}
	return cnt
}
