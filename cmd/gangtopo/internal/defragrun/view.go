package defragrun

import (
	"context"
	"fmt"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// View is the cluster at one moment: the occupancy snapshot, what Slurm
// says about each running job (by job ID), and the pending jobs gangtopo
// decided about.
type View struct {
	Snapshot *occupancy.Snapshot
	Facts    map[string]slurmstate.JobFacts
	Pending  []slurmstate.PendingJob
	At       time.Time
}

// Observe polls Slurm once (cfg: squeue --json for jobs, which alone gives
// the facts) and builds the view of cluster c.
func Observe(ctx context.Context, cfg *slurmstate.PollConfig, c *topology.Cluster, featurePrefix string, now time.Time) (*View, error) {
	if cfg.JobsFrom != slurmstate.SqueueJSON {
		return nil, fmt.Errorf("defragmentation reads jobs from squeue --json (it needs their requeue flag, start and priority): use --jobs-from squeue")
	}
	st, _, err := slurmstate.Poll(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return FromState(st, c, featurePrefix, now)
}

// FromState builds the view of a poll already made.
func FromState(st *slurmstate.State, c *topology.Cluster, featurePrefix string, now time.Time) (*View, error) {
	s, _, err := slurmstate.BuildSnapshot(c, st, now, featurePrefix)
	if err != nil {
		return nil, err
	}
	return NewView(s, st, now), nil
}

// NewView is the view of snapshot s, built from poll st.
func NewView(s *occupancy.Snapshot, st *slurmstate.State, now time.Time) *View {
	v := &View{Snapshot: s, Facts: make(map[string]slurmstate.JobFacts, len(st.Jobs)), Pending: st.Pending, At: now}
	for i := range st.Jobs {
		v.Facts[st.Jobs[i].ID] = st.Jobs[i].Facts
	}
	return v
}

// PendingByID finds a pending job gangtopo decided about.
func (v *View) PendingByID(id string) (slurmstate.PendingJob, bool) {
	for _, pj := range v.Pending {
		if pj.ID == id || pj.TaskID == id {
			return pj, true
		}
	}
	return slurmstate.PendingJob{}, false
}
