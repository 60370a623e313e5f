package frag

import "github.com/gangtopo/gangtopo/selector/topology"

// NodeAmount is FGD's fragmentation amount F_n(M) of one node, in
// milli-GPUs, over the workload's node shapes (gang shapes are measured per
// domain by GangAmount). free is the node's per-GPU free share, cpuLeft its
// free CPU in milli-CPUs and models the set of its GPU models.
//
// It follows NodeGpuShareFragAmount in the FGD simulator: a shape that fits
// counts the idle capacity on GPUs too small for it; a shape that does not
// fit (not enough GPUs, not enough CPU, a model it may not use) and every
// CPU-only shape count all of the node's idle capacity.
func NodeAmount(free []uint16, cpuLeft int64, models topology.ModelSet, w *Workload) float64 {
	var sorted [64]uint16
	k := sortedCopy(sorted[:], free)
	idle := 0
	for _, f := range sorted[:k] {
		idle += int(f)
	}
	if idle == 0 {
		return 0
	}
	amount := 0.0
	for i := range w.Node {
		amount += w.Node[i].Weight * float64(shapeLoss(sorted[:k], idle, cpuLeft, models, &w.Node[i]))
	}
	return amount
}

// shapeLoss is F_n(m) for one shape over an ascending free vector.
func shapeLoss(sorted []uint16, idle int, cpuLeft int64, models topology.ModelSet, s *NodeShape) int {
	if s.Milli == 0 || s.GPUs == 0 {
		return idle // CPU-only shapes see all GPU capacity as unusable
	}
	if s.Models != 0 && s.Models&models == 0 {
		return idle
	}
	// below = GPUs whose free share is smaller than the shape's share.
	below := lowerBound(sorted, uint16(s.Milli))
	if len(sorted)-below < s.GPUs || cpuLeft < s.CPUMilli {
		return idle
	}
	small := 0
	for _, f := range sorted[:below] {
		small += int(f)
	}
	return small
}

// lowerBound returns the number of entries < v in an ascending slice.
func lowerBound(sorted []uint16, v uint16) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		mid := (lo + hi) / 2
		if sorted[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// sortedCopy copies free into dst in ascending order (insertion sort: a node
// has at most 64 GPUs, usually 8) and returns the count.
func sortedCopy(dst []uint16, free []uint16) int {
	k := copy(dst, free)
	for i := 1; i < k; i++ {
		for j := i; j > 0 && dst[j] < dst[j-1]; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return k
}

// GangAmount is F_D(g) for one domain: of idleMilli idle milli-GPUs in the
// domain, those gang shape g cannot use when wholeNodes whole free nodes
// (of g's models) with gpusPerNode GPUs each are available.
func GangAmount(idleMilli int64, wholeNodes, gpusPerNode int, g *GangShape) float64 {
	gangs := wholeNodes / g.Nodes
	usable := int64(gangs*g.Nodes*gpusPerNode) * 1000
	return float64(idleMilli - usable)
}
