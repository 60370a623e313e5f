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
//
// The floating-point arithmetic is FGD's too, operation for operation: each
// shape's weighted loss is added to the accumulator of its class (FGD's
// Q1..Q4, XL, XR, no-access), in workload order, and the classes other than
// "satisfied" are summed in FGD's order. The FGD score squashes the
// difference of two amounts into an integer, and a difference that is zero
// in exact arithmetic truncates to 50 or 49 depending on the last bit, so
// only the same operations give the same placements.
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
	var acc [numClasses]float64
	for i := range w.Node {
		s := &w.Node[i]
		class, loss := shapeLoss(sorted[:k], idle, cpuLeft, models, s)
		acc[class] += s.Weight * float64(loss)
	}
	amount := 0.0
	for _, v := range acc { // acc[classSatisfied] stays 0: it is not fragment
		amount += v
	}
	return amount
}

// FGD's classes of a (node, shape) pair (FragRatioDataMap in its
// pkg/utils/frag.go), in the order its reports sum them. A shape that fits
// puts its too-small GPUs in classLackGPU and the rest in classSatisfied,
// the only class that is not fragment.
const (
	classLackBoth  = iota // Q1: neither GPUs nor CPU enough
	classLackGPU          // Q2: CPU enough, GPUs not
	classSatisfied        // Q3: fits
	classLackCPU          // Q4: GPUs enough, CPU not
	classCPUFits          // XL: a CPU-only shape that fits
	classCPULacks         // XR: a CPU-only shape that does not
	classNoAccess         // the shape may not use the node's model
	numClasses
)

// shapeLoss is F_n(m) for one shape over an ascending free vector, with the
// class FGD files it under.
func shapeLoss(sorted []uint16, idle int, cpuLeft int64, models topology.ModelSet, s *NodeShape) (class, loss int) {
	if s.Milli == 0 || s.GPUs == 0 { // CPU-only shapes see all GPU capacity as unusable
		if cpuLeft >= s.CPUMilli {
			return classCPUFits, idle
		}
		return classCPULacks, idle
	}
	if s.Models != 0 && s.Models&models == 0 {
		return classNoAccess, idle
	}
	// below = GPUs whose free share is smaller than the shape's share.
	below := lowerBound(sorted, uint16(s.Milli))
	gpuFits, cpuFits := len(sorted)-below >= s.GPUs, cpuLeft >= s.CPUMilli
	switch {
	case gpuFits && cpuFits:
		small := 0
		for _, f := range sorted[:below] {
			small += int(f)
		}
		return classLackGPU, small
	case gpuFits:
		return classLackCPU, idle
	case cpuFits:
		return classLackGPU, idle
	}
	return classLackBoth, idle
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

// GangAmount is F_D(g) for one domain: of its idle milli-GPUs, those gang
// shape g cannot use. g runs on whole free nodes (of g's models), g.Nodes at
// a time, each counted at the domain's largest node's GPUs; in a domain of
// nodes of different sizes that counts more than its smaller whole nodes
// hold, so the usable part is at most what the whole free nodes hold (a
// mixed leaf measured -0.4 GPUs before), and the amount is never negative.
func GangAmount(st DomainStats, g *GangShape) float64 {
	gangs := st.WholeNodes / g.Nodes
	usable := min(int64(gangs*g.Nodes*st.GPUsPerNode)*1000, st.WholeMilli)
	return float64(st.IdleMilli - usable)
}
