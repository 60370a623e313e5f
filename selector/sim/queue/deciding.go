package queue

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
)

// Deciding is implemented by policies that decide about a job when it is
// submitted and have Slurm carry the decision out when it schedules the
// job: the job_submit plugin (selector/sim/deployed). For such a policy
// the replay
//
//   - gives every job its own request (JobID is the job's name), since two
//     jobs of one size may be bound to different places, and drops the
//     shortcuts that assume fit depends on the size alone;
//   - calls Submit when the job is submitted, on the state of that moment;
//   - models the controller that keeps decisions fresh: when Place
//     declines a queued job that Stale says a new decision would start
//     now (its binding alone keeps it waiting: a self-inflicted wait), the
//     controller's next cycle (every RebindInterval seconds of replay time)
//     calls Rebind for each such job still waiting, oldest first, on one
//     working copy of the state of then (Rebind holds the place it gives
//     a job on it, so the next job is not sent to the same GPUs), and a
//     scheduling pass follows.
type Deciding interface {
	Submit(s *occupancy.Snapshot, r *request.Request)
	Stale(s *occupancy.Snapshot, r *request.Request) bool
	// Rebind re-decides a job found stale, on the cycle's working copy of
	// the state; false when the controller finds it not stale there after
	// all (the GPUs it would have had were taken since): nothing changed.
	Rebind(s *occupancy.Snapshot, r *request.Request) bool
	// RebindInterval is the controller's cycle in seconds; 0 turns the
	// controller's re-binding off.
	RebindInterval() float64
}

// rebinder is the replay's model of the controller's re-binding: the jobs
// found waiting only because of their binding, since when, and the next
// controller cycle.
type rebinder struct {
	pol      Deciding
	interval float64
	stale    map[int32]float64 // job -> when it was first found stale
	next     float64           // next cycle with work; +Inf when none
	// fresh: job -> the state's key (stateKey) when it was last found not
	// stale. Stale depends on the state and the job alone, and a job's
	// binding changes only when the state did (it started, a node failed),
	// so it is not asked again in the same state: a queue of jobs no
	// binding holds back is not decided again at every pass.
	fresh map[int32]uint64
	buf   []byte // stateKey's
}

func newRebinder(p Policy) *rebinder {
	d, ok := p.(Deciding)
	if !ok {
		return nil
	}
	return &rebinder{pol: d, interval: d.RebindInterval(), stale: map[int32]float64{}, fresh: map[int32]uint64{}, next: math.Inf(1)}
}

// declined notes that job j could not start at t; a stale binding books
// the next controller cycle.
func (rb *rebinder) declined(g *gangSim, t float64, j int32) {
	if rb.interval <= 0 {
		return
	}
	if _, seen := rb.stale[j]; seen {
		return
	}
	key := rb.stateKey(g.s)
	if k, ok := rb.fresh[j]; ok && k == key {
		return
	}
	if !rb.pol.Stale(g.s, g.request(j)) {
		rb.fresh[j] = key
		return
	}
	delete(rb.fresh, j)
	rb.stale[j] = t
	rb.next = min(rb.next, math.Floor(t/rb.interval)*rb.interval+rb.interval)
}

// cycle is the controller's cycle at t: every job still waiting on a
// stale binding is decided again, oldest first, on a working copy of the
// state of now.
func (rb *rebinder) cycle(g *gangSim, t float64) {
	rb.next = math.Inf(1)
	jobs := make([]int32, 0, len(rb.stale))
	for j := range rb.stale {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	work := g.s.Clone()
	for _, j := range jobs {
		since := rb.stale[j]
		delete(rb.stale, j)
		if !math.IsNaN(g.out[j].Start) {
			continue // started meanwhile
		}
		if !rb.pol.Rebind(work, g.request(j)) {
			continue
		}
		g.res.Rebinds++
		g.res.SelfWaitSeconds += t - since
		if t-since > rb.interval {
			g.res.SelfWaitsOverCycle++
		}
	}
}

// nextEvent is the next controller cycle with work (+Inf when none, or
// when the policy has no controller).
func (rb *rebinder) nextEvent() float64 {
	if rb == nil {
		return math.Inf(1)
	}
	return rb.next
}

// stateSeed keys stateKey's hashes (one per process: keys are compared
// within one replay only).
var stateSeed = maphash.MakeSeed()

// stateKey hashes what a decision reads of s: every GPU's free capacity,
// every node's free CPUs and memory and its state. Equal keys are the
// same state (up to a 64-bit hash's collisions). The fields are laid out
// in rb.buf and hashed at once: one Write per field made it the hottest
// spot of a replay with spares (every job a backfill pass declines asks).
func (rb *rebinder) stateKey(s *occupancy.Snapshot) uint64 {
	b := rb.buf[:0]
	for _, f := range s.FreeMilli {
		b = binary.LittleEndian.AppendUint16(b, f)
	}
	for n := range s.State {
		b = append(b, byte(s.State[n]))
		b = binary.LittleEndian.AppendUint32(b, uint32(s.FreeCPUMilli[n]))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.FreeMemMiB[n]))
	}
	rb.buf = b
	return maphash.Bytes(stateSeed, b)
}
