package fgd

import "math/rand"

// GPU selection inside the chosen node, as Open-Gpu-Share's Reserve does it.

// exclusive returns the first k entirely free GPUs in index order
// (AllocateExclusiveGpuId), or nil if there are fewer.
func exclusive(free []uint16, k int) []int {
	out := make([]int, 0, k)
	for i, f := range free {
		if len(out) == k {
			break
		}
		if f == 1000 {
			out = append(out, i)
		}
	}
	if len(out) < k {
		return nil
	}
	return out
}

// tightest returns the GPU with the least free share that still holds
// milli, the first in index order among equals, or -1 (the "best" method).
func tightest(free []uint16, milli int) int {
	at := -1
	for i, f := range free {
		if int(f) >= milli && (at < 0 || f < free[at]) {
			at = i
		}
	}
	return at
}

// bestGPUs is the "best" GPU selection method: the tightest GPU for a
// share, the first free GPUs for whole-GPU jobs.
func bestGPUs(free []uint16, j *Job) []int {
	switch {
	case j.GPUs == 0:
		return nil
	case j.GPUs == 1 && j.Milli < 1000:
		return []int{tightest(free, j.Milli)}
	}
	return exclusive(free, j.GPUs)
}

// randomGPU picks uniformly among the GPUs that hold milli, by reservoir
// sampling in index order (the "random" method), or -1.
func randomGPU(free []uint16, milli int, rng *rand.Rand) int {
	at, seen := -1, 0
	for i, f := range free {
		if int(f) >= milli {
			seen++
			if rng.Intn(seen) == 0 {
				at = i
			}
		}
	}
	return at
}
