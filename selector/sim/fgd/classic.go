package fgd

import (
	"math/bits"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The FGD paper's baseline score plugins (pkg/simulator/plugin/*.go), with
// their constants: resources are normalised by the largest node of the
// trace, 128 CPUs and 8 GPUs.
const (
	maxSpecCPU = 128000
	maxSpecGPU = 8000
)

func gpuLeft(s *occupancy.Snapshot, n topology.NodeID) int64 {
	t := int64(0)
	for _, f := range s.NodeFree(n) {
		t += int64(f)
	}
	return t
}

// bestFit (best_fit_score.go) prefers the node with the least CPU and GPU
// left after the placement, each normalised and weighted by a half:
//
//	score = int64((1 - ((cpuLeft-cpu)/128000*0.5 + (gpuLeft-gpu)/8000*0.5)) * 100)
//
// The plugin then min-max normalises the scores to 0..100 with integer
// arithmetic; that keeps their order and ties (the spread is at most 100),
// so it is not repeated here.
type bestFit struct{}

func (bestFit) score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64 {
	score := 0.0
	score += (float64(s.FreeCPUMilli[n]) - float64(j.CPUMilli)) / maxSpecCPU * 0.5
	score += (float64(gpuLeft(s, n)) - float64(j.TotalMilli())) / maxSpecGPU * 0.5
	return int64((1.0 - score) * 100)
}

func (bestFit) gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int {
	return bestGPUs(s.NodeFree(n), j)
}

// dotProd (dot_product_score.go with dimExtMethod merge, normMethod max) is
// Tetris's alignment score, inverted as the plugin does it: the dot product
// of the node's free (CPU, GPU) and the pod's request, each normalised by
// the largest node, halved, subtracted from 1.
type dotProd struct{}

func (dotProd) score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64 {
	dot := 0.0
	dot += float64(s.FreeCPUMilli[n]) / maxSpecCPU * (float64(j.CPUMilli) / maxSpecCPU)
	dot += float64(gpuLeft(s, n)) / maxSpecGPU * (float64(j.TotalMilli()) / maxSpecGPU)
	return int64(100 * (1 - dot/2))
}

func (dotProd) gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int {
	return bestGPUs(s.NodeFree(n), j)
}

// packing (gpu_packing_score.go) fills partly used GPUs first, then free
// GPUs of used nodes, then empty nodes:
//
//	shares of used GPUs:      100 - (sum of used GPUs' free %)/10, at least 50
//	free GPUs of a used node: 50 - free GPUs taken, at least 33
//	a node with every GPU free: 33 - its GPUs (at least its GPUs)
//
// CPU-only pods score 0 everywhere.
type packing struct{}

func (packing) score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64 {
	if j.GPUs == 0 {
		return 0
	}
	free := s.NodeFree(n)
	whole := int64(s.WholeFree(n))
	if int(whole) == len(free) {
		return max(100/3-whole, whole)
	}
	var taken, wholeTaken, pct int64
	for _, i := range ascending(free) {
		if taken == int64(j.GPUs) {
			break
		}
		if int(free[i]) >= j.Milli {
			taken++
			pct += int64(free[i]) * 100 / 1000
			if free[i] == 1000 {
				wholeTaken++
			}
		}
	}
	if wholeTaken > 0 {
		return max(100/2-wholeTaken, 100/3)
	}
	return max(100-pct/10, 100/2)
}

// ascending returns GPU indices by ascending free share, stable.
func ascending(free []uint16) []int {
	idx := make([]int, len(free))
	for i := range idx {
		idx[i] = i
	}
	for i := 1; i < len(idx); i++ {
		for k := i; k > 0 && free[idx[k]] < free[idx[k-1]]; k-- {
			idx[k], idx[k-1] = idx[k-1], idx[k]
		}
	}
	return idx
}

func (packing) gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int {
	return bestGPUs(s.NodeFree(n), j)
}

// clustering (gpu_clustering_score.go) keeps pods of one kind together.
// A pod's kind is "share" or its GPU count; each node remembers the kinds
// it holds:
//
//	only the pod's kind:       75..100
//	the pod's kind and others: 50..75
//	nothing yet:               25..50
//	only other kinds:           0..25
//
// within each band, 25 * (8000 - node's free GPU milli) / 8000 (integer
// arithmetic). CPU-only pods score 0 everywhere.
type clustering struct {
	kinds []uint64 // by node: bit 0 share, bit k k-GPU pods
}

func newClustering(env *Env) scorer {
	return &clustering{kinds: make([]uint64, len(env.Cluster.Nodes))}
}

func kind(j *Job) uint64 {
	if isShare(j) {
		return 1
	}
	return 1 << min(j.GPUs, 63)
}

func (c *clustering) score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64 {
	if j.GPUs == 0 {
		return 0
	}
	base := 100 / 4 * (maxSpecGPU - gpuLeft(s, n)) / maxSpecGPU
	k := c.kinds[n]
	switch {
	case k&kind(j) != 0 && bits.OnesCount64(k) == 1:
		return base + 75
	case k&kind(j) != 0:
		return base + 50
	case k == 0:
		return base + 25
	}
	return base
}

func (c *clustering) placed(n topology.NodeID, j *Job) {
	if j.GPUs > 0 {
		c.kinds[n] |= kind(j)
	}
}

func (c *clustering) gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int {
	return bestGPUs(s.NodeFree(n), j)
}
