package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../c -DGT_ABI_NO_PROTOTYPES
#include <stdlib.h>
#include "gangtopo_abi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/spank/ctld"
)

func main() {}

// The plugin's state between gt_init and gt_fini. Both are called by
// slurmctld's thread, one at a time; the lock is for the goroutines that
// read it (the server, the holder's reload).
var (
	mu      sync.Mutex
	current *ctld.Holder
	srv     *server
	pub     *publisher
	logs    = make(chan string, 64) // background reload messages, for the next answer
)

//export gt_abi_version
func gt_abi_version() C.int { return C.GT_ABI_VERSION }

//export gt_init
func gt_init(path *C.char, reqFD, respFD C.int, params **C.struct_gt_params, errOut, background **C.char) (rc C.int) {
	defer func() {
		if r := recover(); r != nil {
			setErr(errOut, fmt.Sprintf("internal error while loading: %v", r))
			rc = C.GT_ERR
		}
	}()
	stop() // a second gt_init replaces the first
	p := ctld.DefaultConfigPath
	if path != nil {
		p = C.GoString(path)
	} else if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
		p = env
	}
	s, err := newServer(int(reqFD), int(respFD))
	if err != nil {
		setErr(errOut, err.Error())
		return C.GT_ERR
	}
	pb := &publisher{slot: params}
	h, err := ctld.Open(p, queueLog, func(cfg ctld.Config) {
		applyGoMaxProcs(cfg)
		pb.publish(cfg)
	})
	// A configuration that does not load leaves h without a gate, watching
	// the files: the shim logs err, and every job passes unchanged (no
	// parameters are published, so the shim does not ask) until a fixed
	// file loads.
	if err != nil {
		setErr(errOut, err.Error())
	}
	mu.Lock()
	current, srv, pub = h, s, pb
	mu.Unlock()
	go s.run(holderGate)
	if bg := pendingLogs(); background != nil && bg != nil {
		*background = C.CString(*bg)
	}
	return C.GT_OK
}

//export gt_fini
func gt_fini() {
	defer func() { _ = recover() }()
	stop()
}

// stopWait bounds how long gt_fini waits for a call in progress (slurmctld
// waits meanwhile); a call still running after it finds its pipe closed and
// releases what it holds.
const stopWait = time.Second

// stop ends the server, the holder and the published parameters, in that
// order: no answer is written after the shim may close its ends, and no
// parameters after the shim's pointer may be gone.
func stop() {
	mu.Lock()
	h, s, pb := current, srv, pub
	current, srv, pub = nil, nil, nil
	mu.Unlock()
	if s != nil {
		s.stop(stopWait)
	}
	if h != nil {
		h.Close()
	}
	if pb != nil {
		pb.retire()
	}
}

// holderGate returns the gate in force, or nil after gt_fini.
func holderGate() *ctld.Gate {
	mu.Lock()
	h := current
	mu.Unlock()
	if h == nil {
		return nil
	}
	return h.Gate()
}

// queueLog keeps background reload messages for the next answer (or
// gt_init) to carry: slurmctld's log functions are called from C only, on
// slurmctld's own thread.
func queueLog(msg string) {
	select {
	case logs <- msg:
	default: // full: drop rather than block the reloader
	}
}

func setErr(errOut **C.char, msg string) {
	if errOut != nil {
		*errOut = C.CString(msg)
	}
}
