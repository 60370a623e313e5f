package slurmstate

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Slurm's node states (src/common/slurm_protocol_defs.c, node_states[]
// and node_state_flags[]; 22.05 to 26.05). A node has one base state and
// any number of flags. `scontrol show node` prints them as BASE+FLAG+FLAG
// ("MIXED+DRAIN"), 22.05's `sinfo --json` as a lower-case "state" and an
// upper-case "state_flags" list, the JSON of later series as one list,
// base first (["IDLE","DRAIN"]). sinfo's short form appends one character instead of some flags
// ("down*", "idle~"); those are accepted too.
//
// How they map to occupancy states (what the engine may use):
//
//	base IDLE / MIXED / ALLOCATED  -> idle / mixed / alloc, unless a flag says otherwise
//	base DOWN, ERROR, FUTURE       -> down
//	base UNKNOWN                   -> unknown (not usable)
//	flag DRAIN, FAIL (draining, drained, failing), MAINTENANCE,
//	     POWER_DOWN, POWERING_DOWN, BLOCKED (24.05: kept free around a job
//	     with --exclusive=topo) -> drain: running jobs stay, nothing new starts
//	flag NOT_RESPONDING (*), REBOOT_ISSUED, INVALID_REG, EXTERNAL (26.05: no
//	     slurmd) -> down
//	flag COMPLETING, CLOUD, POWERED_DOWN, POWER_UP, POWERING_UP, RESERVED,
//	     REBOOT_REQUESTED, PLANNED, DYNAMIC_FUTURE, DYNAMIC_NORM, PERFCTRS,
//	     RESUME                    -> no change (Slurm still schedules there:
//	     a powered-down cloud node is resumed for a job; a reservation's
//	     nodes are only partly usable, which the snapshot cannot express)
//
// When several rules apply the most restrictive wins: down over drain over
// the base state. A base state or flag not in these lists is an error, so a
// future Slurm's new state is noticed instead of guessed at.
var baseStates = map[string]occupancy.NodeState{
	"IDLE":      occupancy.StateIdle,
	"MIXED":     occupancy.StateMixed,
	"ALLOCATED": occupancy.StateAlloc,
	"ALLOC":     occupancy.StateAlloc, // sinfo's short name
	"DOWN":      occupancy.StateDown,
	"ERROR":     occupancy.StateDown,
	"FUTURE":    occupancy.StateDown,
	"UNKNOWN":   occupancy.StateUnknown,
}

var stateFlags = map[string]occupancy.NodeState{
	"DRAIN":            occupancy.StateDrain,
	"FAIL":             occupancy.StateDrain,
	"MAINTENANCE":      occupancy.StateDrain,
	"POWER_DOWN":       occupancy.StateDrain,
	"POWERING_DOWN":    occupancy.StateDrain,
	"BLOCKED":          occupancy.StateDrain, // 24.05: held for another job's --exclusive=topo
	"NOT_RESPONDING":   occupancy.StateDown,
	"EXTERNAL":         occupancy.StateDown, // 26.05: a node without a slurmd
	"REBOOT_ISSUED":    occupancy.StateDown,
	"INVALID_REG":      occupancy.StateDown,
	"COMPLETING":       keepState,
	"CLOUD":            keepState,
	"POWERED_DOWN":     keepState,
	"POWER_UP":         keepState,
	"POWERING_UP":      keepState,
	"RESERVED":         keepState,
	"REBOOT_REQUESTED": keepState,
	"PLANNED":          keepState,
	"DYNAMIC_FUTURE":   keepState,
	"DYNAMIC_NORM":     keepState,
	"PERFCTRS":         keepState,
	"RESUME":           keepState,
}

// keepState marks a flag that leaves the base state as it is.
const keepState = occupancy.NodeState(255)

// shortFlags are sinfo's one-character state suffixes (man sinfo, NODE
// STATE CODES).
var shortFlags = map[byte]string{
	'*': "NOT_RESPONDING",
	'~': "POWERED_DOWN",
	'#': "POWERING_UP",
	'%': "POWERING_DOWN",
	'!': "POWER_DOWN",
	'$': "MAINTENANCE",
	'@': "REBOOT_REQUESTED",
	'^': "REBOOT_ISSUED",
	'-': "PLANNED",
}

// MapState maps a Slurm base state and its flags to an occupancy state.
// Case does not matter.
func MapState(base string, flags []string) (occupancy.NodeState, error) {
	b := strings.ToUpper(strings.TrimSpace(base))
	var extra []string
	for len(b) > 0 {
		f, ok := shortFlags[b[len(b)-1]]
		if !ok {
			break
		}
		extra = append(extra, f)
		b = b[:len(b)-1]
	}
	st, ok := baseStates[b]
	if !ok {
		return 0, fmt.Errorf("unknown node state %q (want one of IDLE, MIXED, ALLOCATED, DOWN, ERROR, FUTURE, UNKNOWN)", base)
	}
	for _, f := range append(extra, flags...) {
		fs, ok := stateFlags[strings.ToUpper(strings.TrimSpace(f))]
		if !ok {
			return 0, fmt.Errorf("unknown node state flag %q in state %q", f, base)
		}
		st = stricter(st, fs)
	}
	return st, nil
}

// ParseState maps a complete state as scontrol prints it ("IDLE+DRAIN",
// "DOWN*+DRAIN", "MIXED").
func ParseState(s string) (occupancy.NodeState, error) {
	parts := strings.Split(s, "+")
	st, err := MapState(parts[0], parts[1:])
	if err != nil {
		return 0, fmt.Errorf("state %q: %w", s, err)
	}
	return st, nil
}

// stricter combines a state with a flag's effect: down beats drain beats
// everything else.
func stricter(st, flag occupancy.NodeState) occupancy.NodeState {
	switch {
	case flag == keepState:
		return st
	case st == occupancy.StateDown || flag == occupancy.StateDown:
		return occupancy.StateDown
	case st == occupancy.StateUnknown:
		return st
	default:
		return occupancy.StateDrain
	}
}
