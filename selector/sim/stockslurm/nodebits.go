package stockslurm

import (
	"slices"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// nodeBits is _set_node_bits for --gpus-per-node=g and --gres=gpu:g, in
// three rounds: (1) one GPU from each socket with the job's cores (GPUs
// without affinity first), summing for every other free GPU its links to
// the GPUs taken; (2) more GPUs from those sockets, best linked first;
// (3) GPUs from the other sockets, best linked first. Without Links= the
// rounds reduce to the lowest free indices near the job's cores.
func (g *gpuPicker) nodeBits(i int) []int {
	e := g.e
	hw := &e.m.hw[i]
	node := &e.m.c.Nodes[e.m.order[i]]
	want := e.p.gres
	used := g.usedSockets(i)
	var linksCnt []int
	if hw.links && e.m.ablate&ablateNodeLinks == 0 {
		linksCnt = make([]int, node.NumGPUs())
	}
	for s := -1; s < hw.sockets && len(g.picks[i]) < want; s++ {
		if s >= 0 && !used[s] {
			continue
		}
		if x := g.firstOnSocket(i, s); x >= 0 {
			g.picks[i] = append(g.picks[i], x)
			g.addLinks(node, linksCnt, x, i)
		}
	}
	best := scaleLinks(linksCnt)
	for _, unused := range []bool{false, true} {
		for l := best; l >= 0 && len(g.picks[i]) < want; l-- {
			for s := -1; s < hw.sockets && len(g.picks[i]) < want; s++ {
				if (s == -1 && unused) || (s >= 0 && used[s] == unused) {
					continue
				}
				g.fillSocket(i, s, l, linksCnt, want)
			}
		}
	}
	slices.Sort(g.picks[i])
	return g.picks[i]
}

// firstOnSocket is the lowest free, unpicked GPU of socket s (-1: the
// GPUs usable from any socket), or -1.
func (g *gpuPicker) firstOnSocket(i, s int) int {
	for _, x := range g.e.av[i].free {
		if g.e.m.hw[i].gpuSock[x] == s && !slices.Contains(g.picks[i], x) {
			return x
		}
	}
	return -1
}

// addLinks adds picked GPU x's links to every GPU not held by other jobs.
func (g *gpuPicker) addLinks(node *topology.Node, linksCnt []int, x, i int) {
	if linksCnt == nil {
		return
	}
	for l := range linksCnt {
		if l != x && slices.Contains(g.e.av[i].free, l) {
			linksCnt[l] += node.Links(x, l)
		}
	}
}

// fillSocket takes socket s's free GPUs with at least l summed links, in
// index order, until the node has want.
func (g *gpuPicker) fillSocket(i, s, l int, linksCnt []int, want int) {
	for _, x := range g.e.av[i].free {
		if len(g.picks[i]) >= want {
			return
		}
		if (linksCnt != nil && linksCnt[x] < l) || g.e.m.hw[i].gpuSock[x] != s || slices.Contains(g.picks[i], x) {
			continue
		}
		g.picks[i] = append(g.picks[i], x)
	}
}

// scaleLinks returns the highest summed link count, first scaling the
// counts down so that it is at most 4 (Slurm bounds the rounds so).
func scaleLinks(linksCnt []int) int {
	best := 0
	for _, c := range linksCnt {
		best = max(best, c)
	}
	if best > 4 {
		div := (best + 3) / 4
		best = 0
		for k := range linksCnt {
			linksCnt[k] /= div
			best = max(best, linksCnt[k])
		}
	}
	return best
}
