package intranode

import (
	"math/bits"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// ExhaustiveLimit is the largest number of candidate subsets scored one by
// one before the greedy search takes over.
const ExhaustiveLimit = 4096

// Need is what a job asks of one node.
type Need struct {
	Count     int               // GPUs
	Milli     uint16            // share of each GPU; 1000 = whole GPU
	Slice     int               // every Slice GPUs in one island; 0 or 1: no constraint
	Models    topology.ModelSet // acceptable models; empty: any
	MultiNode bool              // the job spans nodes: NIC proximity counts
	// Frag, if set, measures the fragmentation of the node's free shares
	// after the choice (lower is better); it breaks ties late in the order.
	Frag func(after []uint16) float64
}

// Choice is a chosen set and the measures it won on.
type Choice struct {
	GPUs     []int // local indices, ascending
	Islands  int
	Links    int
	NUMAs    int
	Switches int
	NearNICs int
	Leftover Leftover
	Frag     float64
}

// Leftover describes what stays free after a choice.
type Leftover struct {
	WholeIslands  int
	WholeNUMAs    int
	WholeSwitches int
	BestPair      int // most NVLinks between two GPUs still free
}

// view is a node's facts prepared for repeated scoring.
type view struct {
	c        *topology.Cluster
	n        *topology.Node
	free     []uint16
	need     Need
	eligible []int // GPUs that can take the share and model
	// Per local GPU: ordinal of its island, NUMA node and PCIe switch
	// within the node (-1: unknown), and whether it has a NIC nearby.
	island, numa, pcie []int
	nearNIC            []bool
	// groupSize[kind][ordinal] counts the GPUs in each group.
	groupSize [3][]int
}

func newView(c *topology.Cluster, n *topology.Node, free []uint16, need Need) *view {
	k := n.NumGPUs()
	v := &view{c: c, n: n, free: free, need: need,
		island: make([]int, k), numa: make([]int, k), pcie: make([]int, k), nearNIC: make([]bool, k)}
	numaOrd, pcieOrd := map[int]int{}, map[int]int{}
	for i := 0; i < k; i++ {
		g := &c.GPUs[n.GPU(i)]
		for o, id := range n.Islands {
			if g.Island == id {
				v.island[i] = o
			}
		}
		v.numa[i], v.pcie[i] = ordinal(numaOrd, g.NUMA), ordinal(pcieOrd, g.PCIeSwitch)
		v.nearNIC[i] = len(g.NICs) > 0
		if free[i] >= need.Milli && (need.Models == 0 || need.Models.Has(g.Model)) {
			v.eligible = append(v.eligible, i)
		}
	}
	for kind, ords := range [3][]int{v.island, v.numa, v.pcie} {
		sizes := make([]int, k)
		for _, o := range ords {
			if o >= 0 {
				sizes[o]++
			}
		}
		v.groupSize[kind] = sizes
	}
	return v
}

// ordinal numbers the distinct values of a node-local attribute 0, 1, ...;
// negative values (unknown) stay -1.
func ordinal(seen map[int]int, v int) int {
	if v < 0 {
		return -1
	}
	o, ok := seen[v]
	if !ok {
		o = len(seen)
		seen[v] = o
	}
	return o
}

// Usable is how many GPUs of the node a job with this need could get at
// most, honouring shares, models and slices.
func Usable(c *topology.Cluster, n *topology.Node, free []uint16, need Need) int {
	if need.Slice <= 1 { // no island structure to respect: just count
		anyModel := need.Models == 0 || n.Models&^need.Models == 0
		k := 0
		for i, f := range free {
			if f >= need.Milli && (anyModel || need.Models.Has(c.GPUs[n.GPU(i)].Model)) {
				k++
			}
		}
		return k
	}
	v := newView(c, n, free, need)
	perIsland := make([]int, len(n.Islands))
	for _, i := range v.eligible {
		perIsland[v.island[i]]++
	}
	total := 0
	for _, f := range perIsland {
		total += f / need.Slice * need.Slice
	}
	return total
}

// Choose picks need.Count GPUs of node n, whose free shares are free (by
// local index). ok is false when the node cannot satisfy the need.
func Choose(c *topology.Cluster, n *topology.Node, free []uint16, need Need) (best Choice, ok bool) {
	if need.Count <= 0 {
		return Choice{}, false
	}
	v := newView(c, n, free, need)
	if Usable(c, n, free, need) < need.Count {
		return Choice{}, false
	}
	if binomialAtMost(len(v.eligible), need.Count, ExhaustiveLimit) {
		return v.exhaustive()
	}
	return v.greedy()
}

// exhaustive scores every Count-subset of the eligible GPUs, as bitmasks.
func (v *view) exhaustive() (best Choice, ok bool) {
	k := v.need.Count
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	set := make([]int, k)
	for {
		for i, j := range idx {
			set[i] = v.eligible[j]
		}
		if v.sliceOK(set) {
			ch := v.score(set)
			if !ok || better(&ch, &best) {
				best, ok = ch, true
			}
		}
		if !nextCombination(idx, len(v.eligible)) {
			return best, ok
		}
	}
}

// nextCombination advances idx to the next k-combination of 0..n-1 in
// lexicographic order; false when idx was the last one.
func nextCombination(idx []int, n int) bool {
	k := len(idx)
	i := k - 1
	for i >= 0 && idx[i] == n-k+i {
		i--
	}
	if i < 0 {
		return false
	}
	idx[i]++
	for j := i + 1; j < k; j++ {
		idx[j] = idx[j-1] + 1
	}
	return true
}

// binomialAtMost reports whether C(n, k) <= limit without overflowing.
func binomialAtMost(n, k, limit int) bool {
	if k > n-k {
		k = n - k
	}
	c := 1
	for i := 1; i <= k; i++ {
		c = c * (n - k + i) / i
		if c > limit {
			return false
		}
	}
	return true
}

func (v *view) sliceOK(set []int) bool {
	s := v.need.Slice
	if s <= 1 {
		return true
	}
	var count [64]int
	for _, g := range set {
		count[v.island[g]]++
	}
	for _, c := range count[:len(v.n.Islands)] {
		if c%s != 0 {
			return false
		}
	}
	return true
}

// score measures one candidate set (ascending local indices).
func (v *view) score(set []int) Choice {
	ch := Choice{GPUs: append([]int(nil), set...)}
	var islands, numas, switches uint64
	var chosen uint64
	for a, g := range set {
		chosen |= 1 << g
		islands |= 1 << v.island[g]
		if v.numa[g] >= 0 {
			numas |= 1 << v.numa[g]
		}
		if v.pcie[g] >= 0 {
			switches |= 1 << v.pcie[g]
		}
		if v.need.MultiNode && v.nearNIC[g] {
			ch.NearNICs++
		}
		for _, h := range set[a+1:] {
			ch.Links += v.n.Links(g, h)
		}
	}
	ch.Islands = bits.OnesCount64(islands)
	ch.NUMAs = bits.OnesCount64(numas)
	ch.Switches = bits.OnesCount64(switches)
	ch.Leftover = v.leftover(chosen)
	if v.need.Frag != nil {
		var after [64]uint16
		k := copy(after[:], v.free)
		for _, g := range set {
			after[g] -= v.need.Milli
		}
		ch.Frag = v.need.Frag(after[:k])
	}
	return ch
}

// leftover describes the GPUs still entirely free after taking chosen.
func (v *view) leftover(chosen uint64) Leftover {
	var lo Leftover
	k := v.n.NumGPUs()
	var freeAfter uint64
	for i := 0; i < k; i++ {
		if v.free[i] == 1000 && chosen&(1<<i) == 0 {
			freeAfter |= 1 << i
		}
	}
	lo.WholeIslands = v.wholeGroups(freeAfter, v.island, v.groupSize[0])
	lo.WholeNUMAs = v.wholeGroups(freeAfter, v.numa, v.groupSize[1])
	lo.WholeSwitches = v.wholeGroups(freeAfter, v.pcie, v.groupSize[2])
	for i := 0; i < k; i++ {
		for j := i + 1; j < k && freeAfter&(1<<i) != 0; j++ {
			if freeAfter&(1<<j) != 0 {
				lo.BestPair = max(lo.BestPair, v.n.Links(i, j))
			}
		}
	}
	return lo
}

// wholeGroups counts the groups (islands, NUMA nodes or switches) of two or
// more GPUs whose every GPU is in the free set.
func (v *view) wholeGroups(freeSet uint64, ord, size []int) int {
	var freeIn [64]int
	for i, o := range ord {
		if o >= 0 && freeSet&(1<<i) != 0 {
			freeIn[o]++
		}
	}
	n := 0
	for o, sz := range size {
		if sz > 1 && freeIn[o] == sz {
			n++
		}
	}
	return n
}

// better reports whether a beats b in the documented order.
func better(a, b *Choice) bool {
	switch {
	case a.Islands != b.Islands:
		return a.Islands < b.Islands
	case a.Links != b.Links:
		return a.Links > b.Links
	case a.NUMAs != b.NUMAs:
		return a.NUMAs < b.NUMAs
	case a.Switches != b.Switches:
		return a.Switches < b.Switches
	case a.NearNICs != b.NearNICs:
		return a.NearNICs > b.NearNICs
	case a.Leftover.WholeIslands != b.Leftover.WholeIslands:
		return a.Leftover.WholeIslands > b.Leftover.WholeIslands
	case a.Leftover.WholeNUMAs != b.Leftover.WholeNUMAs:
		return a.Leftover.WholeNUMAs > b.Leftover.WholeNUMAs
	case a.Leftover.WholeSwitches != b.Leftover.WholeSwitches:
		return a.Leftover.WholeSwitches > b.Leftover.WholeSwitches
	case a.Leftover.BestPair != b.Leftover.BestPair:
		return a.Leftover.BestPair > b.Leftover.BestPair
	case a.Frag != b.Frag:
		return a.Frag < b.Frag
	}
	for i := range a.GPUs { // lowest indices first
		if a.GPUs[i] != b.GPUs[i] {
			return a.GPUs[i] < b.GPUs[i]
		}
	}
	return false
}
