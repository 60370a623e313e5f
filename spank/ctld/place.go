package ctld

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// engineSlot is the placement engine with the busy flag of a call that
// outlived its deadline: place.Engine is not safe for concurrent use, so a
// fresh engine replaces one that may still be running.
type engineSlot struct {
	e    *place.Engine
	busy *atomic.Bool // set by an abandoned call until it returns
}

// faultHook runs inside the guarded engine call; a test build
// (fault_inject.go, tag gangtopo_faultinject) makes it panic or stall on
// demand. It is a no-op in the product.
var faultHook = func(jobsubmit.Job) {}

// maxAbandoned bounds the engine calls still running past their deadline.
// Each holds a goroutine (and, through the store, a snapshot copy) inside
// slurmctld; a placement that never returns would otherwise leave one more
// behind with every job. At the cap a job is not placed but answered at
// once as on_failure says, until one of them returns.
const maxAbandoned = 2

// abandoned counts them, across gates: an abandoned call outlives a
// configuration reload.
var abandoned atomic.Int32

// engineRun is one engine call's state, settled once: done by the call, or
// abandoned by the caller at the deadline.
type engineRun struct{ state atomic.Int32 }

const (
	runRunning int32 = iota
	runDone
	runAbandoned
)

// finish is the call's end; an abandoned call gives back its place.
func (r *engineRun) finish() {
	if !r.state.CompareAndSwap(runRunning, runDone) {
		abandoned.Add(-1)
	}
}

// abandon is the caller's timeout; false if the call ended meanwhile.
func (r *engineRun) abandon() bool {
	if r.state.CompareAndSwap(runRunning, runAbandoned) {
		abandoned.Add(1)
		return true
	}
	return false
}

// submitHook runs at the start of Submit, outside the engine's deadline,
// where only the C shim's own timeout catches a stall; no-op in the
// product, like faultHook.
var submitHook = func(jobsubmit.Job) {}

// place runs stages 3-5 of Submit: take the snapshot, place, rewrite.
func (g *Gate) place(j jobsubmit.Job, p jobsubmit.Prepared, now time.Time) jobsubmit.Result {
	snap, info, err := g.store.Acquire(now)
	if err != nil {
		return g.failure(j, err, info.Generation)
	}
	if info.MixVersion != g.mixVersion {
		// a new mix: the engine the store built for it (never used, so
		// free whatever an abandoned call still runs), or runEngine
		// builds one
		e, w, v := g.store.takeEngineLocked()
		g.workload, g.mixVersion, g.engine = w, v, engineSlot{e: e}
	}
	pl, abandoned, err := g.runEngine(j, snap, p)
	defer func() { g.store.Release(abandoned) }()
	if err != nil {
		return g.failure(j, err, info.Generation)
	}
	if pl.Status == place.Placed && g.store.namesHolds() {
		p.Hold = holdName() // the decision line names the hold (held.go)
	}
	out, err := g.decider.Rewrite(j, p, pl, snap, info.Generation)
	if err != nil {
		return g.failure(j, err, info.Generation)
	}
	if v := out.Decision.Verdict; v == jobsubmit.VerdictPlaced || v == jobsubmit.VerdictWider {
		for _, a := range pl.Tasks { // every task of an array is held
			g.store.HoldLocked(a, now, out.Decision.Hold)
		}
	}
	return out
}

type engineOut struct {
	pl  jobsubmit.Placement
	err error
	dur time.Duration // the engine's own time
}

// taskShare is the part of the deadline an array's tasks may use before
// the loop stops placing more (the rest is the answer's margin).
const taskShare = 0.6

// runEngine places the prepared job (every task of an array, until
// taskShare of the deadline is spent) in a goroutine bounded by
// cfg.Deadline, turning a panic into an error. On a timeout the call is
// abandoned (abandoned=true): it keeps reading the snapshot, so the store
// copies it before the next change, and the next call gets a fresh engine.
// With maxAbandoned calls still running, no new one starts.
func (g *Gate) runEngine(j jobsubmit.Job, s *occupancy.Snapshot, p jobsubmit.Prepared) (jobsubmit.Placement, bool, error) {
	if n := abandoned.Load(); n >= maxAbandoned {
		return jobsubmit.Placement{}, false, fmt.Errorf("%d placements are still running past their deadline: none is started until one returns", n)
	}
	if g.engine.e == nil || (g.engine.busy != nil && g.engine.busy.Load()) {
		g.engine = engineSlot{e: place.New(g.Cluster(), g.cfg.EngineOptions(g.workload))}
	}
	e, busy, hook, run := g.engine.e, &atomic.Bool{}, faultHook, &engineRun{}
	busy.Store(true)
	ch := make(chan engineOut, 1)
	go func() {
		defer run.finish()
		defer busy.Store(false)
		defer func() {
			if p := recover(); p != nil {
				ch <- engineOut{err: fmt.Errorf("placement engine panicked: %v", p)}
			}
		}()
		hook(j)
		t0 := time.Now()
		budget := time.Duration(float64(g.cfg.Deadline) * taskShare)
		pl := g.decider.Place(e, s, p, func() bool { return time.Since(t0) < budget })
		ch <- engineOut{pl: pl, dur: time.Since(t0)}
	}()
	timer := time.NewTimer(g.cfg.Deadline)
	defer timer.Stop()
	select {
	case out := <-ch:
		g.lastEngine = out.dur
		return out.pl, false, out.err
	case <-timer.C:
		if !run.abandon() { // it ended as the timer fired
			out := <-ch
			g.lastEngine = out.dur
			return out.pl, false, out.err
		}
		g.engine.busy = busy
		return jobsubmit.Placement{}, true, fmt.Errorf("placement took longer than the %v deadline", g.cfg.Deadline)
	}
}
