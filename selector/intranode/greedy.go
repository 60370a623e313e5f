package intranode

import "sort"

// greedy handles nodes too large to enumerate. With slices it fills whole
// slices island by island (fullest-fitting island first, so big islands
// stay whole); without, it grows a set from every eligible GPU, each time
// adding the GPU with the most links into the set (then same NUMA, same
// switch, lowest index), and keeps the best-scoring result.
func (v *view) greedy() (best Choice, ok bool) {
	if v.need.Slice > 1 {
		set := v.greedySlices()
		if set == nil {
			return Choice{}, false
		}
		return v.score(set), true
	}
	for _, seed := range v.eligible {
		set := v.grow([]int{seed}, v.eligible, v.need.Count)
		sort.Ints(set)
		ch := v.score(set)
		if !ok || better(&ch, &best) {
			best, ok = ch, true
		}
	}
	return best, ok
}

// grow adds GPUs from pool to set until it has k members.
func (v *view) grow(set, pool []int, k int) []int {
	in := map[int]bool{}
	for _, g := range set {
		in[g] = true
	}
	for len(set) < k {
		pick, pickScore := -1, -1
		for _, g := range pool {
			if in[g] {
				continue
			}
			s := 0
			for _, h := range set {
				s += v.n.Links(g, h) * 16
				if v.numa[g] == v.numa[h] {
					s += 2
				}
				if v.pcie[g] >= 0 && v.pcie[g] == v.pcie[h] {
					s++
				}
			}
			if s > pickScore {
				pick, pickScore = g, s
			}
		}
		if pick < 0 {
			return set
		}
		set = append(set, pick)
		in[pick] = true
	}
	return set
}

// greedySlices takes whole slices from islands, smallest sufficient island
// first (best fit), growing each slice by connectivity.
func (v *view) greedySlices() []int {
	s := v.need.Slice
	byIsland := map[int][]int{}
	for _, g := range v.eligible {
		byIsland[v.island[g]] = append(byIsland[v.island[g]], g)
	}
	islands := make([]int, 0, len(byIsland))
	for i := range byIsland {
		islands = append(islands, i)
	}
	sort.Slice(islands, func(a, b int) bool {
		fa, fb := len(byIsland[islands[a]]), len(byIsland[islands[b]])
		if fa != fb {
			return fa < fb
		}
		return islands[a] < islands[b]
	})
	var set []int
	remaining := v.need.Count
	for _, isl := range islands {
		pool := byIsland[isl]
		take := min(len(pool)/s*s, remaining)
		if take == 0 {
			continue
		}
		set = append(set, v.grow([]int{pool[0]}, pool, take)...)
		remaining -= take
		if remaining == 0 {
			sort.Ints(set)
			return set
		}
	}
	return nil
}
