package main

import (
	"fmt"
	"runtime"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

// applyGoMaxProcs sets the Go runtime's GOMAXPROCS inside slurmctld from
// go_max_procs, every time a configuration takes effect, and says so in
// slurmctld's log when it changes. 0 leaves Go's own choice alone.
//
// Why 1 by default: the Go side decides one job at a time. With more Ps,
// every goroutine hand-off (the pipe's reader waking, the engine's
// goroutine starting under its deadline) wakes another thread that spins
// looking for work, and the garbage collector runs workers on every P, all
// inside slurmctld's process (measured: docs/benchmarks.md, "Throughput").
// The deadline does not depend on it: the shim enforces deadline + 50 ms
// in C.
func applyGoMaxProcs(cfg ctld.Config) {
	if cfg.GoMaxProcs <= 0 {
		return
	}
	if old := runtime.GOMAXPROCS(0); old != cfg.GoMaxProcs {
		runtime.GOMAXPROCS(cfg.GoMaxProcs)
		queueLog(fmt.Sprintf("GOMAXPROCS %d (go_max_procs; it was %d)", cfg.GoMaxProcs, old))
	}
}
