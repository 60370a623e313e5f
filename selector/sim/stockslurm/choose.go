package stockslurm

// evalNodes dispatches like _eval_nodes: topology/tree when the model has
// switches, the consecutive-runs best fit otherwise.
func (e *eval) evalNodes(cand []bool, firstPass bool) bool {
	if e.m.sw != nil {
		return e.evalTopo(cand, firstPass)
	}
	return e.evalFlat(cand, firstPass)
}

// chooseNodes is choose_nodes (cons_tres/job_test.c): evaluate all
// candidates with co-located GPUs and cores only ("first pass"); if that
// fails, retry without that restriction while removing the candidates
// with the fewest resources (CPUs + GPUs), one size at a time, to dodge
// the knapsack cases the greedy passes miss.
func (e *eval) chooseNodes() bool {
	cand := make([]bool, len(e.av))
	count := 0
	for i := range e.av {
		if e.av[i].ok && e.av[i].cpus >= 1 {
			cand[i] = true
			count++
		}
	}
	if !e.couldFit(cand) {
		return false
	}
	if e.evalNodes(cand, true) {
		return true
	}
	if count <= e.p.minNodes {
		return e.evalNodes(cand, false)
	}
	mostRes := 0
	for i := range e.av {
		if cand[i] {
			mostRes = max(mostRes, e.av[i].resCnt())
		}
	}
	// Slurm steps size by one up to most_res and evaluates only at the
	// sizes that removed a candidate. After a pass that did not stop,
	// every remaining candidate has more than size resources, so the loop
	// jumps to the next size that removes one: the same passes in the same
	// order, without walking every size up to most_res (thousands for a
	// node whose CPUs the cluster does not say).
	for size := 1; size < mostRes; size = e.nextResCnt(cand, size, mostRes) {
		for i := range cand {
			if cand[i] && e.av[i].resCnt() <= size && count > e.p.minNodes {
				cand[i] = false
				count--
			}
		}
		if e.evalNodes(cand, false) {
			return true
		}
		if count <= e.p.minNodes {
			break
		}
	}
	return false
}

// nextResCnt is the smallest resource count above size among the
// candidates, or limit when none is below it.
func (e *eval) nextResCnt(cand []bool, size, limit int) int {
	next := limit
	for i, ok := range cand {
		if r := e.av[i].resCnt(); ok && r > size && r < next {
			next = r
		}
	}
	return next
}

// couldFit is a shortcut, not part of Slurm: when the candidates together
// lack the nodes or GPUs the job needs, every pass above must fail, so
// skip them (a long queue asks this of many jobs that cannot start).
func (e *eval) couldFit(cand []bool) bool {
	nodes, gpus := 0, 0
	for i, ok := range cand {
		if ok {
			nodes++
			gpus += e.av[i].gpus()
		}
	}
	if nodes < e.p.minNodes {
		return false
	}
	return !e.gresPerJob() || gpus >= e.p.gres
}
