package stockslurm

import (
	"slices"
)

// gpuPicker chooses GPU indices on the nodes of an allocation, as
// gres_select_filter_select_and_set does after the nodes are fixed.
type gpuPicker struct {
	e     *eval
	picks map[int][]int // Slurm node index -> chosen local GPU indices
	total int           // GPUs chosen so far (gres_js->total_gres)
}

// pickGPUs returns the GPUs chosen on each node, or false when the job's
// count cannot be met (Slurm logs "failed to satisfy gres-per-job").
func (e *eval) pickGPUs(nodes []int) (map[int][]int, bool) {
	g := &gpuPicker{e: e, picks: map[int][]int{}}
	p := &e.p
	switch {
	case p.gres == 0:
		return g.picks, true
	case p.share > 0:
		g.picks[nodes[0]] = []int{g.shardGPU(nodes[0])}
		return g.picks, true
	case !p.perJob:
		for _, i := range nodes {
			g.picks[i] = g.nodeBits(i)
			if len(g.picks[i]) != p.gres {
				return nil, false
			}
		}
		return g.picks, true
	}
	for k, i := range nodes {
		g.jobBits1(i, len(nodes)-k)
	}
	for _, i := range nodes {
		if g.total >= p.gres {
			break
		}
		g.jobBits2(i)
	}
	return g.picks, g.total == p.gres
}

// usedSockets are the sockets holding the job's cores on node i: the
// sockets selectCores required, at most one per core the job got there.
func (g *gpuPicker) usedSockets(i int) []bool {
	hw := &g.e.m.hw[i]
	used := make([]bool, hw.sockets)
	req := g.e.reqSock[i]
	cores := g.e.jobCPUs[i]
	if c := g.e.p.cpusPerGres; g.e.gresPerJob() && c > 0 && g.e.gresOn[i] > 0 {
		cores = g.e.gresOn[i] * c
	}
	for s := range used {
		if (req == nil || req[s]) && cores > 0 {
			used[s] = true
			cores--
		}
	}
	return used
}

// candidates lists node i's free GPUs not yet picked, those usable from
// any socket first, then those of each socket in used, in index order.
func (g *gpuPicker) candidates(i int, used []bool) []int {
	hw := &g.e.m.hw[i]
	var out []int
	for s := -1; s < hw.sockets; s++ {
		if s >= 0 && !used[s] {
			continue
		}
		for _, x := range g.e.av[i].free {
			if hw.gpuSock[x] == s && !slices.Contains(g.picks[i], x) {
				out = append(out, x)
			}
		}
	}
	return out
}

// jobBits1 is _set_job_bits1 for --gpus=G: take up to the node's share of
// the remaining count from the sockets with the job's cores; where Links=
// are in effect, take every such GPU and then drop, one by one, the GPU
// least linked to the first GPU of the best-linked pair.
func (g *gpuPicker) jobBits1(i, remNodes int) {
	e := g.e
	maxGres := min(e.p.gres-g.total-(remNodes-1), e.av[i].cnt) // cnt: a memory cap, not in Slurm's code
	if c := e.p.cpusPerGres; c > 0 {
		cores := e.jobCPUs[i]
		if e.gresOn[i] > 0 {
			cores = min(cores, e.gresOn[i]*c)
		}
		maxGres = min(maxGres, cores/c)
	}
	pickAll := maxGres > 1 && e.m.hw[i].links && e.m.ablate&ablateLinkPrune == 0
	cand := g.candidates(i, g.usedSockets(i))
	if !pickAll {
		cand = cand[:min(len(cand), max(maxGres, 0))]
	}
	if len(cand) == 0 {
		cand = g.offSocketGPU(i)
	}
	slices.Sort(cand)
	if len(cand) > maxGres {
		cand = g.pruneByLinks(i, cand, maxGres)
	}
	g.picks[i] = cand
	g.total += len(cand)
}

// offSocketGPU is the fallback of _set_job_bits1: one free GPU from a
// socket without the job's cores.
func (g *gpuPicker) offSocketGPU(i int) []int {
	hw := &g.e.m.hw[i]
	used := g.usedSockets(i)
	for s := 0; s < hw.sockets; s++ {
		if used[s] {
			continue
		}
		for _, x := range g.e.av[i].free {
			if hw.gpuSock[x] == s {
				return []int{x}
			}
		}
	}
	return nil
}

// pruneByLinks drops GPUs from sel (ascending) until want remain: first
// find the pair with the most links (the first such in index order), then
// repeatedly drop the GPU with the fewest links to the pair's first GPU.
func (g *gpuPicker) pruneByLinks(i int, sel []int, want int) []int {
	node := &g.e.m.c.Nodes[g.e.m.order[i]]
	bestLink, bestInx := -1, -1
	for x, a := range sel {
		for _, b := range sel[x+1:] {
			if l := node.Links(a, b); l > bestLink {
				bestLink, bestInx = l, a
			}
		}
	}
	for len(sel) > want && bestLink != -1 {
		worst, worstLink := -1, 1<<30
		for x, b := range sel {
			if b != bestInx && node.Links(bestInx, b) < worstLink {
				worst, worstLink = x, node.Links(bestInx, b)
			}
		}
		sel = slices.Delete(sel, worst, worst+1)
	}
	return sel
}

// jobBits2 is _set_job_bits2: when the first round left the job short,
// add more GPUs from any socket, best linked to the node's first pick.
func (g *gpuPicker) jobBits2(i int) {
	e := g.e
	hw := &e.m.hw[i]
	node := &e.m.c.Nodes[e.m.order[i]]
	bestInx, bestLink := -1, 0
	if hw.links && len(g.picks[i]) > 0 {
		bestInx = g.picks[i][0]
		for x := 0; x < node.NumGPUs(); x++ {
			bestLink = max(bestLink, node.Links(x, bestInx))
		}
	}
	all := make([]bool, hw.sockets)
	for s := range all {
		all[s] = true
	}
	for l := bestLink; l >= 0 && g.total < e.p.gres; l-- {
		for _, x := range g.candidates(i, all) {
			if g.total >= e.p.gres {
				break
			}
			if l > 0 && node.Links(bestInx, x) < l {
				continue
			}
			g.picks[i] = append(g.picks[i], x)
			g.total++
		}
	}
	slices.Sort(g.picks[i])
}

// shardGPU is _pick_specific_topo for a gres/shard share: the first GPU
// with room, preferring those near the job's cores.
func (g *gpuPicker) shardGPU(i int) int {
	cand := g.candidates(i, g.usedSockets(i))
	if len(cand) > 0 {
		return cand[0]
	}
	return g.e.av[i].free[0]
}
