package fgd

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// scorer is one score plugin of the FGD simulator's scheduler, which runs
// the Kubernetes scheduling framework with the Open-Gpu-Share filter and
// exactly one score plugin.
type scorer interface {
	// score rates node n for job j, which fits n: 0..100, higher is
	// better. FGD's plugins return integers; ties are common and decide
	// much of the outcome, so they must be kept as they are.
	score(s *occupancy.Snapshot, n topology.NodeID, j *Job) int64
	// gpus picks the local GPUs j gets on n (Open-Gpu-Share's Reserve
	// with the policy's GPU selection method).
	gpus(s *occupancy.Snapshot, n topology.NodeID, j *Job) []int
}

// observer is implemented by scorers that keep state about placements.
type observer interface {
	placed(n topology.NodeID, j *Job)
}

// kube is a Policy that schedules the way the FGD simulator's scheduler
// does: filter the nodes the job fits (GPU model, enough GPUs with the
// share free, CPU, memory), score each, take the highest score; ties go to
// the node with the lowest rank (FGD's fork of the scheduler picks the
// smallest node name, and names carry a random rank prefix).
//
// Scores are cached per job type and node and recomputed only for nodes
// whose state changed since (detected by the snapshot's node signature and
// free memory), so a pod costs one pass over the nodes plus the scoring of
// the few nodes that changed since the last pod of its type. Nodes are
// visited in rank order, so the first best score is the winner.
type kube struct {
	name   string
	sc     scorer
	c      *topology.Cluster
	byRank []topology.NodeID
	// By rank position: the node state the cache entries were made for.
	sig   []uint64
	mem   []int64
	ver   []uint32
	cache [][]entry // by job type, then rank position
}

type entry struct {
	ver   uint32
	score int64 // -1: does not fit
}

func kubeFactory(name string, mk func(env *Env) scorer) Factory {
	return func(env *Env) (Policy, error) {
		return newKube(name, mk(env), env), nil
	}
}

func newKube(name string, sc scorer, env *Env) *kube {
	n := len(env.Cluster.Nodes)
	k := &kube{
		name: name, sc: sc, c: env.Cluster,
		byRank: byRank(env.Ranks),
		sig:    make([]uint64, n), mem: make([]int64, n), ver: make([]uint32, n),
		cache: make([][]entry, env.Workload.Types),
	}
	for i := range k.ver {
		k.ver[i] = 1 // entries start at version 0: stale
		k.mem[i] = -1
	}
	return k
}

// byRank lists node ids by ascending rank.
func byRank(ranks []int32) []topology.NodeID {
	out := make([]topology.NodeID, len(ranks))
	for n, r := range ranks {
		out[r] = topology.NodeID(n)
	}
	return out
}

func (k *kube) Name() string { return k.name }

func (k *kube) Place(s *occupancy.Snapshot, j *Job) (occupancy.Allocation, bool) {
	k.refresh(s)
	for j.Type >= len(k.cache) {
		k.cache = append(k.cache, nil)
	}
	row := k.cache[j.Type]
	if row == nil {
		row = make([]entry, len(k.byRank))
		k.cache[j.Type] = row
	}
	best, at := int64(-1), -1
	for i, n := range k.byRank {
		e := &row[i]
		if e.ver != k.ver[i] {
			e.ver, e.score = k.ver[i], -1
			if fits(s, n, j) {
				e.score = k.sc.score(s, n, j)
			}
		}
		if e.score > best {
			best, at = e.score, i
		}
	}
	if at < 0 {
		return occupancy.Allocation{}, false
	}
	n := k.byRank[at]
	if o, ok := k.sc.(observer); ok {
		o.placed(n, j)
	}
	return nodeAlloc(n, k.sc.gpus(s, n, j), j), true
}

// refresh bumps the version of every node whose state changed.
func (k *kube) refresh(s *occupancy.Snapshot) {
	for i, n := range k.byRank {
		if sig, mem := s.NodeSig(n), s.FreeMemMiB[n]; sig != k.sig[i] || mem != k.mem[i] {
			k.sig[i], k.mem[i] = sig, mem
			k.ver[i]++
		}
	}
}

// fits is the filter: the node takes work, has the CPU and memory, and (for
// a GPU job) is of an accepted model with enough GPUs that have the share
// free (Open-Gpu-Share's Filter plus Kubernetes' NodeResourcesFit).
func fits(s *occupancy.Snapshot, n topology.NodeID, j *Job) bool {
	if !s.State[n].Usable() || int64(s.FreeCPUMilli[n]) < j.CPUMilli || s.FreeMemMiB[n] < j.MemMiB {
		return false
	}
	if j.GPUs == 0 {
		return true
	}
	if j.Models != 0 && s.Cluster.Nodes[n].Models&j.Models == 0 {
		return false
	}
	k := 0
	for _, f := range s.NodeFree(n) {
		if int(f) >= j.Milli {
			k++
		}
	}
	return k >= j.GPUs
}

func nodeAlloc(n topology.NodeID, gpus []int, j *Job) occupancy.Allocation {
	na := occupancy.NodeAlloc{Node: n, GPUs: gpus, CPUMilli: int32(j.CPUMilli), MemMiB: j.MemMiB}
	if j.GPUs > 0 {
		na.Milli = uint16(j.Milli)
	}
	return occupancy.Allocation{Nodes: []occupancy.NodeAlloc{na}}
}
