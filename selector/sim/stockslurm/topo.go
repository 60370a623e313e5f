package stockslurm

import (
	"cmp"
	"slices"
)

// weightGroup is a topo_weight_info_t: the candidate nodes of one
// scheduling weight, in node index order.
type weightGroup struct {
	weight uint64
	nodes  []int
}

// weightGroups splits the candidate nodes by scheduling weight, lightest
// first. Because can_job_run_on_node puts 0xff - near_gpu_cnt in the low
// byte, nodes with more free GPUs (up to the job's size) are lighter.
func (e *eval) weightGroups(cand []bool) []weightGroup {
	var groups []weightGroup
	counts := map[uint64]int{}
	for i, ok := range cand {
		if ok {
			if counts[e.av[i].weight] == 0 {
				groups = append(groups, weightGroup{weight: e.av[i].weight})
			}
			counts[e.av[i].weight]++
		}
	}
	slices.SortFunc(groups, func(a, b weightGroup) int { return cmp.Compare(a.weight, b.weight) })
	if cap(e.grpArena) < len(cand) {
		e.grpArena = make([]int, len(cand))
	}
	off := 0
	for k := range groups {
		n := counts[groups[k].weight]
		groups[k].nodes = e.grpArena[off : off : off+n]
		off += n
	}
	for i, ok := range cand {
		if ok {
			k := slices.IndexFunc(groups, func(g weightGroup) bool { return g.weight == e.av[i].weight })
			groups[k].nodes = append(groups[k].nodes, i)
		}
	}
	return groups
}

// evalTopo is _eval_nodes_topo (cons_tres/job_test.c, 22.05), without
// required nodes (-w), which the model does not take.
//
// Phases: (1) the top switch: the highest-level switch that has enough
// candidate nodes and holds the lightest nodes; (2) the best nodes: whole
// weight groups, lightest first, until they hold enough CPUs, nodes and
// GPUs; the nodes of all but the last group are forced into the
// allocation ("req2"); (3) leaf switches: the forced nodes' leaves are
// filled first, then leaves are taken one by one, each the closest to
// those already used and, at equal distance, the tightest fit by *node
// count* for the nodes still missing, filling each leaf in node index
// order. A --gpus=G job asks for one node at least, so every leaf "fits"
// and the leaf with the fewest candidate nodes wins, whatever its GPUs.
func (e *eval) evalTopo(cand []bool, firstPass bool) bool {
	e.begin()
	t := e.m.sw
	groups := e.weightGroups(cand)
	swNodes, swCnt := e.switchNodes(cand)
	top := e.topSwitch(groups, swNodes, swCnt)
	if top < 0 {
		return false
	}
	inTop := make([]bool, len(cand))
	for _, i := range swNodes[top] {
		inTop[i] = true
	}
	best, req2, ok := e.bestNodes(groups, inTop, firstPass)
	if !ok {
		return false
	}
	required := make([]bool, len(t.level))
	if len(req2) > 0 {
		if e.takeForced(req2, swNodes, required) {
			return true
		}
		if e.maxNodes <= 0 {
			return false
		}
	}
	for k := range swNodes {
		swNodes[k] = filter(swNodes[k], best, swNodes[k][:0])
		swCnt[k] = len(swNodes[k])
	}
	if len(req2) > 0 && e.fillRequiredLeaves(swNodes, required) {
		return true
	}
	return e.fillLeaves(swNodes, swCnt, required)
}

// topSwitch is phase 1: the highest-level switch with enough nodes whose
// lightest weight group is no heavier than the current choice.
func (e *eval) topSwitch(groups []weightGroup, swNodes [][]int, swCnt []int) int {
	t := e.m.sw
	top := -1
	var topWeight uint64
	for k := range swNodes {
		if !e.enoughNodes(swCnt[k], e.remNodes) {
			continue
		}
		g := slices.IndexFunc(groups, func(g weightGroup) bool { return overlaps(g.nodes, swNodes[k]) })
		if g < 0 {
			continue
		}
		if top == -1 || (t.level[k] >= t.level[top] && groups[g].weight <= topWeight) {
			top, topWeight = k, groups[g].weight
		}
	}
	return top
}

// bestNodes is phase 2. It returns best_nodes_bitmap, the forced nodes
// (req2_nodes_bitmap) in index order, and whether the groups suffice.
func (e *eval) bestNodes(groups []weightGroup, inTop []bool, firstPass bool) ([]bool, []int, bool) {
	best := make([]bool, len(inTop))
	var req2 []int
	bestCPUs, bestCnt, bestGres := 0, 0, 0
	sufficient := false
	for _, g := range groups {
		if sufficient {
			break
		}
		if bestCnt > 0 {
			req2 = req2[:0]
			for i, b := range best {
				if b {
					req2 = append(req2, i)
				}
			}
		}
		for _, i := range g.nodes {
			if !inTop[i] {
				continue
			}
			cpus := e.selectCores(i, firstPass)
			if cpus == 0 {
				continue
			}
			best[i] = true
			e.availCPU[i] = cpus
			bestCPUs += cpus
			bestCnt++
			bestGres += e.av[i].gpus()
		}
		sufficient = bestCPUs >= e.remCPUs && e.enoughNodes(bestCnt, e.remNodes) && e.gresSufficient(bestGres)
	}
	return best, req2, sufficient
}

// takeForced adds the forced lighter nodes and marks their switches
// required. It reports whether they alone complete the job.
func (e *eval) takeForced(req2 []int, swNodes [][]int, required []bool) bool {
	for _, i := range req2 {
		if e.maxNodes <= 0 {
			break
		}
		e.take(i)
	}
	for k := range swNodes {
		if overlaps(req2, swNodes[k]) {
			required[k] = true
		}
	}
	return e.done()
}

// fillRequiredLeaves adds the remaining best nodes of the leaves that hold
// forced nodes, in switch then node order.
func (e *eval) fillRequiredLeaves(swNodes [][]int, required []bool) bool {
	for k := 0; k < e.m.sw.leaves; k++ {
		if !required[k] {
			continue
		}
		for _, i := range swNodes[k] {
			if e.chosen[i] || e.availCPU[i] == 0 {
				continue
			}
			e.take(i)
			if e.done() {
				return true
			}
		}
	}
	return false
}

// fillLeaves is phase 3 proper: pick leaf after leaf with
// _topo_choose_best_switch until the job is complete or no leaf helps.
func (e *eval) fillLeaves(swNodes [][]int, swCnt []int, required []bool) bool {
	t := e.m.sw
	dist := make([]int, len(t.level))
	for k, r := range required {
		if r {
			addDist(dist, t.dist[k])
		}
	}
	for prev := e.remNodes + 1; prev != e.remNodes; {
		prev = e.remNodes
		leaf := -1
		for k := 0; k < t.leaves; k++ {
			if !required[k] {
				leaf = e.betterSwitch(dist, swCnt, k, leaf)
			}
		}
		if leaf == -1 {
			break
		}
		addDist(dist, t.dist[leaf])
		for _, i := range swNodes[leaf] {
			if e.maxNodes <= 0 {
				break
			}
			if e.chosen[i] || e.availCPU[i] == 0 {
				continue
			}
			e.take(i)
			if e.done() {
				return true
			}
		}
		swCnt[leaf] = 0
	}
	return e.minRemNodes <= 0 && e.remCPUs <= 0 && e.gresTest()
}

// betterSwitch is _topo_choose_best_switch: leaf k replaces the best so
// far if it is closer and fits at least as well, or equally close and
// fits strictly better.
func (e *eval) betterSwitch(dist, swCnt []int, k, best int) int {
	if best == -1 || dist[k] == infinite || swCnt[k] == 0 {
		if swCnt[k] > 0 && dist[k] < infinite {
			return k
		}
		return best
	}
	tcs := e.compareSwitches(k, best, swCnt)
	if (dist[k] < dist[best] && tcs >= 0) || (dist[k] == dist[best] && tcs > 0) {
		return k
	}
	return best
}

// compareSwitches is _topo_compare_switches: 1 if switch i fits the
// remaining nodes better than j. A switch that fits beats one that does
// not; of two that fit, the one with fewer nodes wins; of two that do not,
// their parents are compared, and at the end the bigger one wins.
func (e *eval) compareSwitches(i, j int, swCnt []int) int {
	t := e.m.sw
	rem := e.remNodes
	for {
		iFit, jFit := swCnt[i] >= rem, swCnt[j] >= rem
		if iFit && jFit {
			if c := cmp.Compare(swCnt[j], swCnt[i]); c != 0 {
				return c
			}
			break
		}
		if iFit {
			return 1
		}
		if jFit {
			return -1
		}
		if (t.parent[i] != i || t.parent[j] != j) && t.parent[i] != t.parent[j] {
			i, j = t.parent[i], t.parent[j]
			continue
		}
		break
	}
	if c := cmp.Compare(swCnt[i], swCnt[j]); c != 0 {
		return c
	}
	return cmp.Compare(t.level[j], t.level[i])
}

// addDist is _topo_add_dist.
func addDist(dist, from []int) {
	for k := range dist {
		if from[k] == infinite || dist[k] == infinite {
			dist[k] = infinite
		} else {
			dist[k] += from[k]
		}
	}
}

// switchNodes lists each switch's candidate nodes (switch_node_bitmap
// and switch_node_cnt), in scratch space of the evaluation.
func (e *eval) switchNodes(cand []bool) ([][]int, []int) {
	t := e.m.sw
	swNodes := make([][]int, len(t.level))
	swCnt := make([]int, len(t.level))
	total := 0
	for _, nodes := range t.nodes {
		total += len(nodes)
	}
	if cap(e.swArena) < total {
		e.swArena = make([]int, total)
	}
	off := 0
	for k, nodes := range t.nodes {
		swNodes[k] = filter(nodes, cand, e.swArena[off:off:off+len(nodes)])
		swCnt[k] = len(swNodes[k])
		off += len(nodes)
	}
	return swNodes, swCnt
}

// filter appends the nodes to keep to out; out may alias nodes.
func filter(nodes []int, keep []bool, out []int) []int {
	for _, i := range nodes {
		if keep[i] {
			out = append(out, i)
		}
	}
	return out
}

// overlaps reports whether two ascending index lists share an element.
func overlaps(a, b []int) bool {
	for x, y := 0, 0; x < len(a) && y < len(b); {
		switch {
		case a[x] == b[y]:
			return true
		case a[x] < b[y]:
			x++
		default:
			y++
		}
	}
	return false
}
