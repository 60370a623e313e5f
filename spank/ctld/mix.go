package ctld

import (
	"encoding/json"
	"fmt"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
)

// The engine measures fragmentation against a request mix: the one the
// controller learned from the cluster's jobs and publishes with the
// snapshot, or the engine's default (frag.PhillyPrior) until there is
// one. Building an engine for a new mix costs milliseconds on a large
// cluster, so it is done where snapshots are loaded (Store.Refresh, in the
// background), never inside a job_submit call: the call only takes the
// engine already built (Gate.place).

// storeMix is the store's part: the mix in force and the engine built for
// it, not yet taken by the gate.
type storeMix struct {
	fingerprint string // the mix's JSON; "" for none
	version     uint64 // counts changes of the mix
	workload    *frag.Workload
	fresh       *place.Engine
}

// mixUpdate is a new mix read from a snapshot, with its engine.
type mixUpdate struct {
	fingerprint string
	workload    *frag.Workload
	engine      *place.Engine
	msg         string
}

// prepareMix builds what a loaded snapshot's mix needs, outside the
// store's lock; nil when the mix is the one in force. A mix the cluster
// cannot use (an unknown model) is logged and the default used.
func (s *Store) prepareMix(snap *occupancy.Snapshot) *mixUpdate {
	fp := ""
	if snap.Mix != nil {
		b, err := json.Marshal(snap.Mix)
		if err == nil {
			fp = string(b)
		}
	}
	s.mu.Lock()
	same := fp == s.mix.fingerprint
	s.mu.Unlock()
	if same {
		return nil
	}
	u := &mixUpdate{fingerprint: fp, msg: "the snapshot has no request mix: the engine measures against the default mix"}
	if snap.Mix != nil {
		w, err := frag.MixWorkload(s.cluster, snap.Mix)
		if err != nil {
			u.msg = fmt.Sprintf("the snapshot's request mix is not usable (%v): the engine measures against the default mix", err)
		} else {
			u.workload = &w
			u.msg = fmt.Sprintf("request mix of %d jobs from the snapshot: %d node shapes, %d gang shapes", snap.Mix.Jobs, len(w.Node), len(w.Gangs))
		}
	}
	u.engine = place.New(s.cluster, s.cfg.EngineOptions(u.workload))
	return u
}

// applyMixLocked puts a prepared mix in force (the store's lock held).
func (s *Store) applyMixLocked(u *mixUpdate) {
	if u == nil {
		return
	}
	s.mix = storeMix{fingerprint: u.fingerprint, version: s.mix.version + 1, workload: u.workload, fresh: u.engine}
}

// takeEngineLocked hands the gate the engine built for mix version v, once
// (nil when it was taken already); the workload is the mix's, for any
// engine the gate builds later for it. Call it between Acquire and Release.
func (s *Store) takeEngineLocked() (*place.Engine, *frag.Workload, uint64) {
	e := s.mix.fresh
	s.mix.fresh = nil
	return e, s.mix.workload, s.mix.version
}
