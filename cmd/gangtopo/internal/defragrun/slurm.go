package defragrun

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Slurm is what carrying a plan out asks of Slurm; Scontrol is the real
// one, tests give a fake.
type Slurm interface {
	// Hold creates reservation name on nodes for user, lasting d, with
	// Flags=IGNORE_JOBS (the jobs about to be requeued still run there).
	Hold(ctx context.Context, name, nodes, user string, d time.Duration) error
	// Attach puts pending job id in reservation name; Detach takes job id
	// (pending or running) out of any reservation.
	Attach(ctx context.Context, id, name string) error
	Detach(ctx context.Context, id string) error
	// Unhold deletes reservation name (it must have no job left).
	Unhold(ctx context.Context, name string) error
	// Requeue requeues a running job.
	Requeue(ctx context.Context, id string) error
	// Eligible makes a pending job eligible now (StartTime=now).
	Eligible(ctx context.Context, id string) error
	// Job says a job's state and reason; ok false for a job Slurm does
	// not know (any more).
	Job(ctx context.Context, id string) (state, reason string, ok bool, err error)
	// Holds lists the reservations gangtopo holds (named HoldPrefix...).
	Holds(ctx context.Context) ([]Hold, error)
	// Pin sets a pending job's ReqNodeList.
	Pin(ctx context.Context, id, nodes string) error
}

// Hold is one of gangtopo's reservations.
type Hold struct {
	Name  string
	Nodes string
	End   time.Time
	Users string
}

// Gang is the job a hold is for, from its name.
func (h Hold) Gang() string { return strings.TrimPrefix(h.Name, HoldPrefix) }

// Scontrol is Slurm through scontrol, from BinDir when set, each command
// killed after Timeout.
type Scontrol struct {
	BinDir  string
	Timeout time.Duration
}

func (s Scontrol) run(ctx context.Context, args ...string) (string, error) {
	return slurmstate.Scontrol(ctx, s.BinDir, s.Timeout, args...)
}

// Hold creates the reservation.
func (s Scontrol) Hold(ctx context.Context, name, nodes, user string, d time.Duration) error {
	mins := max(int((d+time.Minute-1)/time.Minute), 1)
	_, err := s.run(ctx, "create", "reservation", "ReservationName="+name, "StartTime=now", "Duration="+strconv.Itoa(mins),
		"Nodes="+nodes, "Users="+user, "Flags=IGNORE_JOBS")
	return err
}

// Attach puts a pending job in the reservation.
func (s Scontrol) Attach(ctx context.Context, id, name string) error {
	_, err := s.run(ctx, "update", "JobId="+id, "ReservationName="+name)
	return err
}

// Detach takes a job out of its reservation.
func (s Scontrol) Detach(ctx context.Context, id string) error {
	_, err := s.run(ctx, "update", "JobId="+id, "ReservationName=")
	return err
}

// Unhold deletes the reservation.
func (s Scontrol) Unhold(ctx context.Context, name string) error {
	_, err := s.run(ctx, "delete", "ReservationName="+name)
	return err
}

// Requeue requeues a job.
func (s Scontrol) Requeue(ctx context.Context, id string) error {
	_, err := s.run(ctx, "requeue", id)
	return err
}

// Eligible sets StartTime=now.
func (s Scontrol) Eligible(ctx context.Context, id string) error {
	_, err := s.run(ctx, "update", "JobId="+id, "StartTime=now")
	return err
}

// Pin sets ReqNodeList.
func (s Scontrol) Pin(ctx context.Context, id, nodes string) error {
	_, err := s.run(ctx, "update", "JobId="+id, "ReqNodeList="+nodes)
	return err
}

// Job reads `scontrol -o show job id`.
func (s Scontrol) Job(ctx context.Context, id string) (string, string, bool, error) {
	out, err := s.run(ctx, "-o", "show", "job", id)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return "", "", false, nil
		}
		return "", "", false, err
	}
	f := keyValues(out)
	if f["JobId"] == "" {
		return "", "", false, fmt.Errorf("scontrol show job %s: no JobId in %q", id, firstWords(out))
	}
	return f["JobState"], f["Reason"], true, nil
}

// Holds lists gangtopo's reservations.
func (s Scontrol) Holds(ctx context.Context) ([]Hold, error) {
	out, err := s.run(ctx, "-o", "show", "reservation")
	if err != nil {
		return nil, err
	}
	return ParseHolds(out), nil
}

// ParseHolds reads `scontrol -o show reservation`: one reservation a
// line; only gangtopo's are returned.
func ParseHolds(out string) []Hold {
	var holds []Hold
	for _, line := range strings.Split(out, "\n") {
		f := keyValues(line)
		name := f["ReservationName"]
		if !strings.HasPrefix(name, HoldPrefix) {
			continue
		}
		h := Hold{Name: name, Nodes: f["Nodes"], Users: f["Users"]}
		if t, err := time.ParseInLocation("2006-01-02T15:04:05", f["EndTime"], time.Local); err == nil {
			h.End = t
		}
		holds = append(holds, h)
	}
	return holds
}

// keyValues reads the Key=Value words of one scontrol line (the first
// occurrence of a key wins; a value with blanks keeps only its first
// word, enough for the keys read here).
func keyValues(line string) map[string]string {
	f := map[string]string{}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		if _, dup := f[k]; !dup {
			f[k] = v
		}
	}
	return f
}

func firstWords(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
