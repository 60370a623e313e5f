package stockslurm

// consecSet is one run of consecutive candidate nodes of equal scheduling
// weight (the consec_* arrays of _eval_nodes).
type consecSet struct {
	start, end int // node indices, inclusive
	cpus       int
	nodes      int
	gres       int
	weight     uint64
}

const noWeight = ^uint64(0) // NO_VAL64

// consecSets cuts the candidates into runs. A run ends at a node that is
// not a candidate (or offers no CPUs) and where the weight changes, so
// with GPUs the runs also break between nodes with different free GPU
// counts (up to the job's size).
func (e *eval) consecSets(cand []bool, firstPass bool) []consecSet {
	sets := append(e.sets[:0], consecSet{weight: noWeight})
	defer func() { e.sets = sets[:0] }()
	cur := &sets[0]
	for i := range cand {
		ok := cand[i]
		if ok {
			e.availCPU[i] = e.selectCores(i, firstPass)
			ok = e.availCPU[i] > 0
		}
		if ok && cur.weight != noWeight && e.av[i].weight != cur.weight && cur.nodes > 0 {
			cur.end = i - 1
			sets = append(sets, consecSet{weight: noWeight})
			cur = &sets[len(sets)-1]
		}
		switch {
		case ok:
			if cur.nodes == 0 {
				cur.start = i
			}
			cur.cpus += e.availCPU[i]
			cur.nodes++
			cur.gres += e.av[i].gpus()
			cur.weight = e.av[i].weight
		case cur.nodes == 0:
			cur.weight = noWeight
		default:
			cur.end = i - 1
			sets = append(sets, consecSet{weight: noWeight})
			cur = &sets[len(sets)-1]
		}
	}
	if cur.nodes > 0 {
		cur.end = len(cand) - 1
	} else {
		sets = sets[:len(sets)-1]
	}
	return sets
}

// evalFlat is _eval_nodes (cons_tres/job_test.c, 22.05), the selection
// without a topology plugin: a best fit over runs of consecutive nodes.
//
// Phases: (1) cut the candidates into runs of equal weight; (2) pick a run:
// the lightest, then among equal weights the first run that suffices, then
// the sufficient run with the fewest CPUs; while nothing suffices, the run
// with the most CPUs (a quirk kept from the source: an insufficient run
// with more CPUs also displaces a sufficient one); (3) inside the run, a
// job that needs one more node takes the sufficient node with the fewest
// free CPUs, otherwise nodes are taken in index order; (4) repeat with the
// next run until the job is complete.
func (e *eval) evalFlat(cand []bool, firstPass bool) bool {
	e.begin()
	sets := e.consecSets(cand, firstPass)
	for e.maxNodes > 0 {
		b := e.bestSet(sets)
		if b < 0 {
			break
		}
		e.fillSet(&sets[b])
		if e.done() {
			return true
		}
		sets[b].cpus, sets[b].nodes = 0, 0
	}
	return e.remCPUs <= 0 && e.gresTest() && e.enoughNodes(0, e.remNodes)
}

// bestSet is phase 2; -1 when no run has nodes left.
func (e *eval) bestSet(sets []consecSet) int {
	best, bestSufficient := -1, false
	for k := range sets {
		c := &sets[k]
		if c.nodes == 0 {
			continue
		}
		sufficient := c.cpus >= e.remCPUs && e.enoughNodes(c.nodes, e.remNodes) && e.gresSufficient(c.gres)
		newBest := best == -1 || c.weight < sets[best].weight
		if !newBest && c.weight == sets[best].weight {
			newBest = (sufficient && !bestSufficient) ||
				(sufficient && c.cpus < sets[best].cpus) ||
				(!sufficient && c.cpus > sets[best].cpus)
		}
		if newBest {
			best, bestSufficient = k, sufficient
		}
	}
	return best
}

// fillSet is phase 3.
func (e *eval) fillSet(c *consecSet) {
	if e.remNodes <= 1 {
		if fit := e.bestSingleNode(c); fit >= 0 {
			for i := c.start; i <= c.end; i++ {
				if i != fit {
					e.availCPU[i] = 0
				}
			}
		}
	}
	for i := c.start; i <= c.end; i++ {
		if e.maxNodes == 0 || e.done() {
			return
		}
		avail := e.availCPU[i]
		if e.chosen[i] || avail <= 0 || (e.maxNodes == 1 && avail < e.remCPUs) {
			continue
		}
		e.take(i)
	}
}

// bestSingleNode is the node of the run that alone completes the job with
// the fewest free CPUs (the first such, stopping at an exact fit).
func (e *eval) bestSingleNode(c *consecSet) int {
	fit, size := -1, 0
	for i := c.start; i <= c.end; i++ {
		if e.chosen[i] || !e.av[i].ok || e.availCPU[i] < e.remCPUs || !e.gresSufficient(e.av[i].gpus()) {
			continue
		}
		if fit == -1 || e.availCPU[i] < size {
			fit, size = i, e.availCPU[i]
			if size == e.remCPUs {
				break
			}
		}
	}
	return fit
}
