package defragrun

import (
	"context"
	"slices"
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
// its state), its state as jobState names it.
func (s Clients) Job(ctx context.Context, id string) (string, string, bool, error) {
	r, ok, err := slurmstate.ReadJob(ctx, s.BinDir, s.Timeout, id)
	if err != nil || !ok {
		return "", "", false, err
	}
	return jobState(r), r.Reason, true, nil
}

// requeueFlags are the state flags of a job whose requeue Slurm has not
// finished, in the order Slurm's job_state_string names them.
var requeueFlags = []string{"COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD"}

// jobState is a job's state as the executor reads it: the base state,
// except that a job pending with a requeue flag is that flag (COMPLETING,
// REQUEUED), as 22.05's single job_state string named it. From 23.02
// Slurm lists a requeued job as ["PENDING", "COMPLETING", "REQUEUED"]
// while its old steps still end; only when they have does Slurm finish
// the requeue and give the job its new begin time (a requeued batch job
// waits a while, reason BeginTime). A StartTime=now before then is
// overwritten by it: on 26.05.5 a gang's expedited job stayed PENDING
// (BeginTime) past the plan's wait. So the wait for "pending again" ends
// only when these flags are gone, on every series alike.
func jobState(r slurmstate.Record) string {
	if r.State != "PENDING" {
		return r.State
	}
	for _, f := range requeueFlags {
		if slices.Contains(r.Flags, f) {
			return f
		}
	}
	return r.State
}

// Holds lists gangtopo's reservations.
func (s Clients) Holds(ctx context.Context) ([]Hold, error) {
	out, err := s.run(ctx, "-o", "show", "reservation")
	if err != nil {
		return nil, err
	}
	return ParseHolds(out), nil
}
