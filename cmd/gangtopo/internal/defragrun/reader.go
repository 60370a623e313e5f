package defragrun

import (
	"context"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Reader is what carrying a plan out reads of Slurm while it waits and
// tends its holds; Clients is the real one, tests give a fake. Every
// change goes through the door (actuate.Door), never through a Reader.
type Reader interface {
	// Job says a job's state and reason; ok false for a job Slurm does
	// not know (any more).
	Job(ctx context.Context, id string) (state, reason string, ok bool, err error)
	// Holds lists the reservations gangtopo holds (named HoldPrefix...).
	Holds(ctx context.Context) ([]Hold, error)
}

// Clients reads Slurm through its clients, from BinDir when set, each
// command killed after Timeout.
type Clients struct {
	BinDir  string
	Timeout time.Duration
}

func (s Clients) run(ctx context.Context, args ...string) (string, error) {
	return slurmstate.Scontrol(ctx, s.BinDir, s.Timeout, args...)
}

// Job reads the job from `squeue --json --jobs=ID --states=all`
// (slurmstate.ReadJob: not scontrol's text, where a job's name can forge
// its state).
func (s Clients) Job(ctx context.Context, id string) (string, string, bool, error) {
	r, ok, err := slurmstate.ReadJob(ctx, s.BinDir, s.Timeout, id)
	if err != nil || !ok {
		return "", "", false, err
	}
	return r.State, r.Reason, true, nil
}

// Holds lists gangtopo's reservations.
func (s Clients) Holds(ctx context.Context) ([]Hold, error) {
	out, err := s.run(ctx, "-o", "show", "reservation")
	if err != nil {
		return nil, err
	}
	return ParseHolds(out), nil
}
