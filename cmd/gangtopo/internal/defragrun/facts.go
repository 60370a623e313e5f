package defragrun

import (
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
)

// CheckpointKey is the word a job puts in its comment to advertise a
// checkpoint: GANGTOPO_CHECKPOINT=<time> (RFC 3339, or Unix seconds) for
// the last one it saved, or GANGTOPO_CHECKPOINT=sigterm for a job that
// saves its state when Slurm signals it (a requeue sends SIGTERM, then
// SIGKILL after KillWait). Users write their comments: a job that claims a
// checkpoint it does not have only makes itself a cheaper victim.
const CheckpointKey = "GANGTOPO_CHECKPOINT"

// Checkpoint reads a comment's advertised checkpoint: its time, or
// sigterm; neither when the comment has none (or one that does not read).
func Checkpoint(comment string) (at time.Time, sigterm bool) {
	for _, w := range strings.Fields(comment) {
		v, ok := strings.CutPrefix(w, CheckpointKey+"=")
		if !ok {
			continue
		}
		v = strings.Trim(v, ",;")
		if strings.EqualFold(v, "sigterm") {
			return time.Time{}, true
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t.UTC(), false
		}
		if sec, err := strconv.ParseInt(v, 10, 64); err == nil && sec > 0 {
			return time.Unix(sec, 0).UTC(), false
		}
	}
	return time.Time{}, false
}

// JobOf is what the planner weighs about a job, from Slurm's facts and its
// partition.
func JobOf(f slurmstate.JobFacts, partition string) defrag.Job {
	at, sigterm := Checkpoint(f.Comment)
	return defrag.Job{Requeue: f.Requeue, Partition: partition, QOS: f.QOS, Account: f.Account,
		Start: f.Start, Checkpoint: at, OnSIGTERM: sigterm, Restarts: f.Restarts, Priority: f.Priority}
}
