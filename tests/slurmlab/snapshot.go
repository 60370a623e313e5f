package slurmlab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// WriteSnapshot writes the lab's occupancy snapshot (selector/occupancy v1
// JSON) to path, atomically, from `scontrol -o show node` (states) and
// `scontrol -d -o show job` (each running job's GPUs per node).
//
// This is test scaffolding standing in for `gangtopo snapshot
// --from-slurm` (the Slurm state readers of cmd/gangtopo/internal/
// slurmstate) until that command lands: the product reads snapshots, it
// does not make them here. CPUs and memory are not tracked (the lab's jobs
// use one CPU per GPU and no memory).
func (l *Lab) WriteSnapshot(ctx context.Context, path string, gen uint64) error {
	return l.WriteSnapshotAt(ctx, path, gen, time.Now())
}

// WriteSnapshotAt is WriteSnapshot with the snapshot's time set to at (a
// stale snapshot, for the fault tests).
func (l *Lab) WriteSnapshotAt(ctx context.Context, path string, gen uint64, at time.Time) error {
	s := occupancy.New(l.Cluster)
	s.Generation, s.Time = gen, at
	if err := l.readNodeStates(ctx, s); err != nil {
		return err
	}
	if err := l.readJobs(ctx, s); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), ".snapshot.tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := s.Encode(f, "tests/slurmlab"); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (l *Lab) readNodeStates(ctx context.Context, s *occupancy.Snapshot) error {
	out, err := l.Run(ctx, DefaultTimeout, "scontrol", "-o", "show", "node")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var name, state string
		for _, tok := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(tok, "NodeName="); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(tok, "State="); ok {
				state = v
			}
		}
		id, ok := l.Cluster.NodeByName(name)
		if !ok {
			continue
		}
		s.SetState(id, nodeState(state))
	}
	return nil
}

// nodeState maps Slurm's "MIXED+DRAIN" style states.
func nodeState(st string) occupancy.NodeState {
	base, flags, _ := strings.Cut(strings.ToUpper(st), "+")
	switch {
	case strings.Contains(flags, "DRAIN") || strings.HasPrefix(base, "DRAIN"):
		return occupancy.StateDrain
	case strings.HasPrefix(base, "DOWN"), strings.Contains(flags, "NOT_RESPONDING"):
		return occupancy.StateDown
	case strings.HasPrefix(base, "IDLE"):
		return occupancy.StateIdle
	case strings.HasPrefix(base, "MIX"):
		return occupancy.StateMixed
	case strings.HasPrefix(base, "ALLOC"):
		return occupancy.StateAlloc
	}
	return occupancy.StateUnknown
}

func (l *Lab) readJobs(ctx context.Context, s *occupancy.Snapshot) error {
	out, err := l.Run(ctx, DefaultTimeout, "scontrol", "-d", "-o", "show", "job")
	if err != nil {
		if strings.Contains(err.Error(), "No jobs in the system") {
			return nil
		}
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "No jobs") {
			continue
		}
		j, err := ParseJob(line)
		if err != nil {
			return err
		}
		if j.State != "RUNNING" && j.State != "COMPLETING" {
			continue
		}
		if err := s.AddJob(toOccupancyJob(l.Cluster, j)); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

func toOccupancyJob(c *topology.Cluster, j *Job) occupancy.Job {
	oj := occupancy.Job{ID: j.ID, Partition: j.Fields["Partition"]}
	for _, name := range j.Nodes {
		id, ok := c.NodeByName(name)
		if !ok {
			continue
		}
		oj.Alloc.Nodes = append(oj.Alloc.Nodes, occupancy.NodeAlloc{Node: id, GPUs: j.GPUs[name], Milli: occupancy.WholeGPU})
	}
	return oj
}
