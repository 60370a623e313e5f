package fgd

import (
	"math"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// fgd is FGD's score plugin (pkg/simulator/plugin/fgd_score.go): how much a
// placement lowers the node's fragmentation F_n(M) under the typical
// workload M (selector/frag), squashed to an integer score:
//
//	score = int64(sigmoid((F_before - F_after) / 1000) * 100)
//
// 50 means no change; below 50 the placement fragments the node. The
// quantisation to integers makes many nodes tie, and ties go to the lowest
// rank. For a share of one GPU every GPU that holds it is tried (in index
// order) and the best one, the first among equals, is both the node's score
// and the GPU the pod gets; whole-GPU pods take the first free GPUs.
type fgd struct {
	m       *frag.Meter
	scratch [64]uint16
}

func newFGD(env *Env) scorer {
	return &fgd{m: frag.NewMeter(env.Cluster, &env.Workload.Typical)}
}

func (f *fgd) score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64 {
	sc, _ := f.eval(s, n, j)
	return sc
}

func (f *fgd) gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int {
	if isShare(j) {
		_, g := f.eval(s, n, j)
		return []int{g}
	}
	return bestGPUs(s.NodeFree(n), j)
}

// eval returns the node's score and, for a share, the GPU that earns it.
func (f *fgd) eval(s *occupancy.Snapshot, n topology.NodeID, j *Job) (int64, int) {
	before := f.m.Node(s, n)
	free := s.NodeFree(n)
	after := f.scratch[:len(free)]
	cpu := s.FreeCPUMilli[n] - int32(j.CPUMilli)
	if isShare(j) {
		best, at := int64(0), -1
		for i, fr := range free {
			if int(fr) < j.Milli {
				continue
			}
			copy(after, free)
			after[i] -= uint16(j.Milli)
			if sc := fgdScore(before, f.m.NodeAfter(n, after, cpu)); at < 0 || sc > best {
				best, at = sc, i
			}
		}
		return best, at
	}
	copy(after, free)
	for _, g := range exclusive(free, j.GPUs) {
		after[g] = 0
	}
	return fgdScore(before, f.m.NodeAfter(n, after, cpu)), -1
}

func isShare(j *Job) bool { return j.GPUs == 1 && j.Milli < 1000 }

// fgdScore is FGD's squashing of a fragmentation decrease into 0..100.
func fgdScore(before, after float64) int64 {
	return int64(sigmoid((before-after)/1000) * 100)
}

func sigmoid(x float64) float64 { return 1.0 / (1.0 + math.Exp(-x)) }
