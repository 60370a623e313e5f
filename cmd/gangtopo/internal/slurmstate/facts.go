package slurmstate

import (
	"time"
)

// JobFacts are what Slurm says about a job beyond the resources it holds:
// what defragmentation weighs about a running job (may it be requeued, in
// which partition, QOS and account, since when, how often before) and what
// it needs about a pending gang (its user, for the reservation that holds
// the room freed for it). Read from squeue --json; scontrol's text source
// leaves them zero.
type JobFacts struct {
	// Requeue is Slurm's requeue flag: the job may be requeued (its own
	// --requeue, or JobRequeue=1 and no --no-requeue).
	Requeue bool
	// Batch is Slurm's batch_flag: a batch script (sbatch). salloc and
	// srun allocations are not: Slurm cannot requeue them, so preempting
	// one under PreemptMode=REQUEUE cancels it.
	Batch   bool
	QOS     string
	Account string
	// Comment is the user's comment (where a job advertises a checkpoint).
	Comment string
	// Reservation is the reservation the job runs in or asked for.
	Reservation string
	Start       time.Time // start_time: when it started (last)
	Restarts    int       // restart_cnt
	// TimeLimit is the job's time limit (time_limit, minutes); 0 when it
	// has none (INFINITE) or it is not set.
	TimeLimit time.Duration
	Priority  uint32
	UserID    uint32
	// AdminComment is the job's AdminComment as Slurm holds it: where
	// gangtopo's decision and its pin mark live (users cannot write it).
	AdminComment string
	// Known says the facts were read (squeue --json); false for jobs from
	// scontrol's text.
	Known bool
}

// factField reads one of the facts; handled is false for any other key.
// priority and user_id are read with the pending fields and copied after.
func (s *jsonScanner) factField(key []byte, f *JobFacts) (handled bool, err error) {
	switch string(key) {
	case "requeue":
		f.Requeue, err = s.boolean()
	case "batch_flag":
		f.Batch, err = s.boolean()
	case "qos":
		f.QOS, err = s.looseStr()
	case "account":
		f.Account, err = s.looseStr()
	case "comment":
		f.Comment, err = s.looseStr()
	case "resv_name":
		f.Reservation, err = s.looseStr()
	case "start_time":
		var v int64
		if v, err = s.wrappedInt(); v > 0 {
			f.Start = time.Unix(v, 0).UTC()
		}
	case "time_limit":
		var v int64
		v, err = s.wrappedInt()
		// 22.05 writes minutes plainly, INFINITE and NO_VAL as such (or
		// null); later series wrap them, infinite read as 0
		if v > 0 && v < 0xfffffffe {
			f.TimeLimit = time.Duration(v) * time.Minute
		}
	case "restart_cnt":
		var v int64
		v, err = s.wrappedInt()
		f.Restarts = int(min(max(v, 0), 1<<31-1))
	default:
		return false, nil
	}
	return true, err
}

// boolean reads true or false; null reads as false.
func (s *jsonScanner) boolean() (bool, error) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return false, s.literal("null")
	}
	return false, s.errorf("want true or false, found %s", s.describeNext())
}

// wrappedInt reads an integer written plainly (22.05) or wrapped as
// {"set": true, "infinite": false, "number": N} (later series); null, an
// unset or an infinite number read as 0.
func (s *jsonScanner) wrappedInt() (int64, error) {
	v, _, err := s.num()
	return v, err
}
