package stockslurm

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// PlaceJob decides where Slurm would start j now. It returns false when
// the job would stay pending; the error is for a job the model cannot
// express or a snapshot of another cluster.
//
// Pipeline: (0) the nodes the job may use: partitions, node lists and
// the constraint, one node set per alternative of a matching-OR group,
// tried in the order written (_pick_best_nodes' feature loop); then, per
// node set: (1) per node, what can_job_run_on_node finds (usable GPUs,
// CPUs, the scheduling weight); (2) choose_nodes with topology/tree or the
// flat best fit; (3) --switches; (4) GPU indices per node; (5) the
// allocation, CPUs and memory split in proportion to GPUs, checked against
// the snapshot. The first node set that starts the job wins.
func (m *Model) PlaceJob(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool, error) {
	if s.Cluster != m.c {
		return occupancy.Allocation{}, false, errors.New("stockslurm: snapshot belongs to another cluster")
	}
	if err := j.check(); err != nil {
		return occupancy.Allocation{}, false, err
	}
	sets, err := m.matching(j.Constraint)
	if err != nil {
		return occupancy.Allocation{}, false, fmt.Errorf("stockslurm: %w", err)
	}
	base := m.baseMask(j)
	mask := make([]bool, len(base))
	for alt := range sets {
		if !maskOf(sets[alt], base, mask) {
			continue
		}
		if a, ok := m.placeOn(s, j, mask); ok {
			return a, true, nil
		}
	}
	return occupancy.Allocation{}, false, nil
}

// placeOn is steps 1-5 of PlaceJob on the nodes of mask (by Slurm index).
func (m *Model) placeOn(s *occupancy.Snapshot, j *Job, mask []bool) (occupancy.Allocation, bool) {
	e := m.newEval(s, j, mask)
	defer e.release()
	if !e.chooseNodes() {
		return occupancy.Allocation{}, false
	}
	var nodes []int
	for i, ok := range e.chosen {
		if ok {
			nodes = append(nodes, i)
		}
	}
	if e.p.switches > 0 && m.sw != nil && m.leafCount(nodes) > e.p.switches {
		return occupancy.Allocation{}, false // waits for a tighter fit
	}
	picks, ok := e.pickGPUs(nodes)
	if !ok {
		return occupancy.Allocation{}, false
	}
	a := e.allocation(nodes, picks)
	if s.Fits(a) != nil {
		return occupancy.Allocation{}, false
	}
	return a, true
}

// leafCount is the number of leaf switches an allocation touches.
func (m *Model) leafCount(nodes []int) int {
	n := 0
	for k := 0; k < m.sw.leaves; k++ {
		if overlaps(nodes, m.sw.nodes[k]) {
			n++
		}
	}
	return n
}

// allocation builds the result: nodes in Slurm order, GPUs ascending,
// CPUs and memory split in proportion to each node's GPUs (evenly for a
// CPU-only job).
func (e *eval) allocation(nodes []int, picks map[int][]int) occupancy.Allocation {
	weights := make([]int64, len(nodes))
	var total int64
	for k, i := range nodes {
		weights[k] = int64(len(picks[i]))
		if e.p.gres == 0 {
			weights[k] = 1
		}
		total += weights[k]
	}
	cpu := split(e.job.CPUMilli, weights, total)
	mem := split(e.job.MemMiB, weights, total)
	milli := uint16(occupancy.WholeGPU)
	if e.p.share > 0 {
		milli = uint16(e.p.share)
	}
	a := occupancy.Allocation{Nodes: make([]occupancy.NodeAlloc, len(nodes))}
	for k, i := range nodes {
		na := occupancy.NodeAlloc{Node: e.m.order[i], GPUs: slices.Clone(picks[i]),
			CPUMilli: int32(cpu[k]), MemMiB: mem[k]}
		if len(na.GPUs) > 0 {
			na.Milli = milli
		}
		a.Nodes[k] = na
	}
	return a
}

// split divides v in proportion to weights without losing a unit.
func split(v int64, weights []int64, total int64) []int64 {
	out := make([]int64, len(weights))
	if total == 0 {
		return out
	}
	var cum, prev int64
	for k, w := range weights {
		cum += w
		next := v * cum / total
		out[k] = next - prev
		prev = next
	}
	return out
}
