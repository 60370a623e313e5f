package ctld

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Held decisions, matched by job.
//
// The store counts a placed job's GPUs as taken (HoldLocked) until a
// snapshot late enough to show the job, if it started, arrives (PendingHold
// after the decision). Matched by time alone, a job cancelled or refused
// right after its decision (by a later job_submit plugin, or by slurmctld's
// own checks after job_submit) kept its GPUs counted that long: nothing
// else would place there meanwhile.
//
// Inside job_submit the job has no ID yet (slurmctld assigns it after
// every plugin has run), so each hold gets a name of its own, written into
// the decision line (hold=, jobsubmit.Decision.Hold), and the controller
// lists the holds of the pending jobs it sees (occupancy.Snapshot
// PendingHolds, from AdminComment only: users cannot write it). A hold
// whose name a snapshot taken goneGrace or more after the decision does
// not list is let go: its job started (the snapshot counts its GPUs
// itself, on whatever GPUs Slurm gave it), was cancelled, or never came to
// be. A listed one is kept under the time rule. Holds are matched by time
// alone when the names cannot be read back: decision_field: comment (the
// controller reads AdminComment only), or a snapshot that does not list
// pending jobs (scontrol's text, an older controller).

// goneGrace is how long after a decision a snapshot must have been taken
// for the job to show in it if it exists: slurmctld creates the job record
// after job_submit returns, in the same RPC but after taking its job lock
// again, which a busy slurmctld may keep it waiting for. The snapshot's
// time is when the controller's poll began, before squeue runs.
const goneGrace = 2 * time.Second

type heldAlloc struct {
	at    time.Time
	hold  string // the decision's hold=, "" when not named
	alloc occupancy.Allocation
}

// holdName makes a hold's name: 48 random bits, which no two of a
// cluster's pending jobs share in practice (the store keeps its holds for
// pending_hold, never across a restart).
func holdName() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "" // matched by time alone
	}
	return hex.EncodeToString(b[:])
}

// namesHolds says whether the decisions' holds can be read back: the
// controller reads them from AdminComment.
func (s *Store) namesHolds() bool {
	return s.cfg.PendingHold > 0 && s.cfg.DecisionField == jobsubmit.FieldAdminComment
}

// HoldLocked records a decision's allocation under the decision's hold
// name and applies it to the working snapshot. Call it between Acquire and
// Release.
func (s *Store) HoldLocked(a occupancy.Allocation, now time.Time, hold string) {
	if s.cfg.PendingHold <= 0 || s.work == nil {
		return
	}
	if s.shared {
		s.work, s.shared = s.work.Clone(), false
	}
	if s.work.Allocate(a) == nil {
		s.held = append(s.held, heldAlloc{at: now, hold: hold, alloc: a})
	}
}

// rebuild makes work = cur + the held decisions still pending against it.
func (s *Store) rebuild() {
	s.work, s.shared = s.cur.Clone(), false
	kept := s.held[:0]
	for _, h := range s.held {
		if !s.cur.Time.Before(h.at.Add(s.cfg.PendingHold)) {
			continue // the snapshot is late enough to show the job, if it started
		}
		if s.gone(h) {
			continue
		}
		if s.work.Allocate(h.alloc) == nil {
			kept = append(kept, h)
		}
	}
	s.held = kept
}

// gone says the current snapshot shows that h's job is not pending: it
// lists the pending jobs' holds, without h's, and was taken late enough
// to list it.
func (s *Store) gone(h heldAlloc) bool {
	return h.hold != "" && s.namesHolds() && s.cur.PendingHolds != nil && !s.cur.PendingHolds[h.hold] &&
		!s.cur.Time.Before(h.at.Add(goneGrace))
}
