package occupancy

import (
	"fmt"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// WholeGPU is the capacity of one GPU in milli-GPUs.
const WholeGPU = 1000

// NodeState is a node's scheduling state, as Slurm reports it.
type NodeState uint8

// Node states. Only idle, mixed and alloc nodes take new work.
const (
	StateUnknown NodeState = iota // not reported: treated as unavailable
	StateIdle
	StateMixed
	StateAlloc
	StateDrain // draining or drained: running jobs stay, no new ones
	StateDown
)

var stateNames = []string{"unknown", "idle", "mixed", "alloc", "drain", "down"}

func (s NodeState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Usable reports whether a node in this state may receive new jobs.
func (s NodeState) Usable() bool { return s == StateIdle || s == StateMixed || s == StateAlloc }

// ParseState reads a state name.
func ParseState(name string) (NodeState, error) {
	for i, n := range stateNames {
		if n == name {
			return NodeState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown node state %q (want one of idle, mixed, alloc, drain, down, unknown)", name)
}

// Snapshot is the occupancy of one cluster at one moment. The arrays are
// indexed by the cluster's NodeID and GPUID. A Snapshot is not safe for
// concurrent mutation; readers may share one that nobody mutates.
type Snapshot struct {
	Cluster    *topology.Cluster
	Generation uint64
	Time       time.Time

	FreeMilli    []uint16    // by GPUID: free capacity, 0..WholeGPU
	FreeCPUMilli []int32     // by NodeID: free CPU in milli-CPUs
	FreeMemMiB   []int64     // by NodeID
	State        []NodeState // by NodeID
	Jobs         []Job
	// Features, by NodeID, are the node features Slurm reports for each
	// node (sinfo's active features), so that the plugin binds jobs only
	// to features nodes really carry. nil when the snapshot does not say.
	// Shared between clones: replace, do not modify.
	Features [][]string
	// Mix is the request mix the controller learned (nil: not known yet;
	// the engine then uses its default). Shared between clones.
	Mix *Mix
	// Bindings are gangtopo's part of pending jobs' fields (binding.go),
	// for the plugin's job_modify. Shared between clones.
	Bindings []Binding
	// PendingHolds are the holds named in the decisions of the pending
	// jobs Slurm listed (binding.go), for the plugin's held decisions; nil
	// when the snapshot does not say. Shared between clones.
	PendingHolds map[string]bool

	wholeFree []uint8  // by NodeID: GPUs with FreeMilli == WholeGPU
	idle      []int32  // by NodeID: sum of FreeMilli over the node's GPUs
	sig       []uint64 // by NodeID: see NodeSig
}

// Job is a running job and what it holds.
type Job struct {
	ID        string
	User      string
	Partition string
	// Request is the job's gang topology request as the user wrote it
	// (e.g. "leaf:required,slice=8"), if any.
	Request string
	// Models are the GPU models the job accepts, when it named any (from
	// gangtopo's decision line); empty: any model, or not known.
	Models []string
	Alloc  Allocation
}

// New returns a snapshot of cluster c with everything free and every node
// idle: the starting point of tests and simulations.
func New(c *topology.Cluster) *Snapshot {
	s := &Snapshot{
		Cluster:      c,
		FreeMilli:    make([]uint16, len(c.GPUs)),
		FreeCPUMilli: make([]int32, len(c.Nodes)),
		FreeMemMiB:   make([]int64, len(c.Nodes)),
		State:        make([]NodeState, len(c.Nodes)),
		wholeFree:    make([]uint8, len(c.Nodes)),
		idle:         make([]int32, len(c.Nodes)),
		sig:          make([]uint64, len(c.Nodes)),
	}
	for i := range s.FreeMilli {
		s.FreeMilli[i] = WholeGPU
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		s.FreeCPUMilli[i] = int32(min(n.CPUs*1000, 1<<31-1))
		s.FreeMemMiB[i] = n.MemoryMiB
		s.State[i] = StateIdle
		s.refresh(topology.NodeID(i))
	}
	return s
}

// Clone returns a deep copy that can be mutated independently.
func (s *Snapshot) Clone() *Snapshot {
	c := *s
	c.FreeMilli = append([]uint16(nil), s.FreeMilli...)
	c.FreeCPUMilli = append([]int32(nil), s.FreeCPUMilli...)
	c.FreeMemMiB = append([]int64(nil), s.FreeMemMiB...)
	c.State = append([]NodeState(nil), s.State...)
	c.Jobs = append([]Job(nil), s.Jobs...)
	c.wholeFree = append([]uint8(nil), s.wholeFree...)
	c.idle = append([]int32(nil), s.idle...)
	c.sig = append([]uint64(nil), s.sig...)
	return &c
}

// HasFeature reports whether Slurm says node n carries feature f; ok is
// false when the snapshot does not report features at all.
func (s *Snapshot) HasFeature(n topology.NodeID, f string) (has, ok bool) {
	if s.Features == nil {
		return false, false
	}
	for _, x := range s.Features[n] {
		if x == f {
			return true, true
		}
	}
	return false, true
}

// WholeFree is the number of entirely free GPUs on a node.
func (s *Snapshot) WholeFree(n topology.NodeID) int { return int(s.wholeFree[n]) }

// IdleMilli is the free GPU capacity of a node, in milli-GPUs.
func (s *Snapshot) IdleMilli(n topology.NodeID) int { return int(s.idle[n]) }

// NodeFree returns the free milli-GPUs of a node's GPUs, by local index.
// The slice aliases the snapshot: do not modify it.
func (s *Snapshot) NodeFree(n topology.NodeID) []uint16 {
	node := &s.Cluster.Nodes[n]
	return s.FreeMilli[node.GPULo:node.GPUHi]
}

// NodeSig is a hash of everything about a node that decides how useful it
// is to future jobs: its GPU models and count, the multiset of its GPUs'
// free capacity, and its free CPUs. Two nodes with the same signature
// fragment the same way, so scorers may cache per signature.
func (s *Snapshot) NodeSig(n topology.NodeID) uint64 { return s.sig[n] }

// IsWholeNodeFree reports whether every GPU of the node is free and the node
// takes work.
func (s *Snapshot) IsWholeNodeFree(n topology.NodeID) bool {
	return s.State[n].Usable() && int(s.wholeFree[n]) == s.Cluster.Nodes[n].NumGPUs()
}

// IsIdle reports whether nothing is allocated on the node (every GPU and
// every CPU free) and it takes work: what a job that takes its nodes whole
// (Slurm's --exclusive) needs.
func (s *Snapshot) IsIdle(n topology.NodeID) bool {
	return s.IsWholeNodeFree(n) && s.FreeCPUMilli[n] == int32(min(s.Cluster.Nodes[n].CPUs*1000, 1<<31-1))
}

// SetState changes a node's state.
func (s *Snapshot) SetState(n topology.NodeID, st NodeState) {
	s.State[n] = st
}

// refresh recomputes a node's derived fields after a change.
func (s *Snapshot) refresh(n topology.NodeID) {
	node := &s.Cluster.Nodes[n]
	free := s.FreeMilli[node.GPULo:node.GPUHi]
	whole, idle := 0, int32(0)
	for _, f := range free {
		if f == WholeGPU {
			whole++
		}
		idle += int32(f)
	}
	s.wholeFree[n] = uint8(whole)
	s.idle[n] = idle
	s.sig[n] = Signature(node.Models, free, s.FreeCPUMilli[n])
}

// Signature hashes a node state the way NodeSig does, for states that are
// only being considered (a node after a hypothetical allocation).
func Signature(models topology.ModelSet, free []uint16, cpuMilli int32) uint64 {
	var sorted [64]uint16
	k := copy(sorted[:], free)
	for i := 1; i < k; i++ { // insertion sort: k <= 64, usually 8
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	h := uint64(fnvOffset)
	h = fnvMix(h, uint64(models))
	h = fnvMix(h, uint64(k))
	for i := 0; i < k; i++ {
		h = fnvMix(h, uint64(sorted[i]))
	}
	return fnvMix(h, uint64(uint32(cpuMilli)))
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvMix(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}
