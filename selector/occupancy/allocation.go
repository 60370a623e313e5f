package occupancy

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Allocation is what one job holds (or would hold): per node, some GPUs
// with the same share each, plus CPUs and memory.
type Allocation struct {
	Nodes []NodeAlloc
}

// NodeAlloc is one node's part of an allocation.
type NodeAlloc struct {
	Node     topology.NodeID
	GPUs     []int  // local GPU indices, ascending
	Milli    uint16 // share of each GPU, 1..WholeGPU
	CPUMilli int32
	MemMiB   int64
}

// NumGPUs is the number of GPUs in the allocation.
func (a Allocation) NumGPUs() int {
	n := 0
	for _, na := range a.Nodes {
		n += len(na.GPUs)
	}
	return n
}

// Fits reports, without changing anything, why the allocation could not be
// applied to s (nil if it can).
func (s *Snapshot) Fits(a Allocation) error {
	for _, na := range a.Nodes {
		if err := s.nodeFits(na); err != nil {
			return err
		}
	}
	return nil
}

func (s *Snapshot) nodeFits(na NodeAlloc) error {
	c := s.Cluster
	if na.Node < 0 || int(na.Node) >= len(c.Nodes) {
		return fmt.Errorf("node id %d out of range", na.Node)
	}
	node := &c.Nodes[na.Node]
	if na.Milli == 0 && len(na.GPUs) > 0 || na.Milli > WholeGPU {
		return fmt.Errorf("node %s: GPU share %d out of range 1..%d", node.Name, na.Milli, WholeGPU)
	}
	for _, g := range na.GPUs {
		if g < 0 || g >= node.NumGPUs() {
			return fmt.Errorf("node %s: GPU index %d out of range 0..%d", node.Name, g, node.NumGPUs()-1)
		}
		if s.FreeMilli[node.GPU(g)] < na.Milli {
			return fmt.Errorf("node %s: GPU %d has %d milli free, %d asked", node.Name, g, s.FreeMilli[node.GPU(g)], na.Milli)
		}
	}
	if s.FreeCPUMilli[na.Node] < na.CPUMilli {
		return fmt.Errorf("node %s: %d milli-CPUs free, %d asked", node.Name, s.FreeCPUMilli[na.Node], na.CPUMilli)
	}
	if s.FreeMemMiB[na.Node] < na.MemMiB {
		return fmt.Errorf("node %s: %d MiB free, %d asked", node.Name, s.FreeMemMiB[na.Node], na.MemMiB)
	}
	return nil
}

// Allocate takes the allocation's resources. It is all or nothing: when any
// part does not fit, nothing changes and the error says which.
func (s *Snapshot) Allocate(a Allocation) error {
	if err := s.Fits(a); err != nil {
		return err
	}
	for _, na := range a.Nodes {
		node := &s.Cluster.Nodes[na.Node]
		for _, g := range na.GPUs {
			s.FreeMilli[node.GPU(g)] -= na.Milli
		}
		s.FreeCPUMilli[na.Node] -= na.CPUMilli
		s.FreeMemMiB[na.Node] -= na.MemMiB
		s.refresh(na.Node)
		s.updateBusyState(na.Node)
	}
	return nil
}

// Release gives an allocation's resources back. Releasing more than was
// taken is an error and changes nothing.
func (s *Snapshot) Release(a Allocation) error {
	for _, na := range a.Nodes {
		node := &s.Cluster.Nodes[na.Node]
		for _, g := range na.GPUs {
			if g < 0 || g >= node.NumGPUs() || int(s.FreeMilli[node.GPU(g)])+int(na.Milli) > WholeGPU {
				return fmt.Errorf("node %s: releasing GPU %d would exceed its capacity", node.Name, g)
			}
		}
	}
	for _, na := range a.Nodes {
		node := &s.Cluster.Nodes[na.Node]
		for _, g := range na.GPUs {
			s.FreeMilli[node.GPU(g)] += na.Milli
		}
		s.FreeCPUMilli[na.Node] += na.CPUMilli
		s.FreeMemMiB[na.Node] += na.MemMiB
		s.refresh(na.Node)
		s.updateBusyState(na.Node)
	}
	return nil
}

// updateBusyState keeps idle/mixed/alloc in step with the free capacity;
// drain, down and unknown are left as they are.
func (s *Snapshot) updateBusyState(n topology.NodeID) {
	if !s.State[n].Usable() {
		return
	}
	node := &s.Cluster.Nodes[n]
	switch {
	case int(s.wholeFree[n]) == node.NumGPUs() && s.FreeCPUMilli[n] == int32(min(node.CPUs*1000, 1<<31-1)):
		s.State[n] = StateIdle
	case s.wholeFree[n] == 0 && s.idle[n] == 0:
		s.State[n] = StateAlloc
	default:
		s.State[n] = StateMixed
	}
}

// AddJob allocates a job's resources and records it as running.
func (s *Snapshot) AddJob(j Job) error {
	if err := s.Allocate(j.Alloc); err != nil {
		return fmt.Errorf("job %s: %w", j.ID, err)
	}
	s.Jobs = append(s.Jobs, j)
	return nil
}

// RemoveJob gives back what running job id holds and forgets it, as when
// it ends or is preempted; an unknown id is an error and changes nothing.
func (s *Snapshot) RemoveJob(id string) error {
	for i, j := range s.Jobs {
		if j.ID != id {
			continue
		}
		if err := s.Release(j.Alloc); err != nil {
			return fmt.Errorf("job %s: %w", id, err)
		}
		s.Jobs = append(s.Jobs[:i:i], s.Jobs[i+1:]...)
		return nil
	}
	return fmt.Errorf("job %s: not running on the snapshot", id)
}
