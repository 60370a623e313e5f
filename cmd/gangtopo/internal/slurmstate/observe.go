package slurmstate

import "sync/atomic"

// Every Slurm client command the process runs (a poll's listings,
// Command's scontrol and sacctmgr, RunSqueueJSON) is reported, before it
// runs, to the observer set with ObserveCommands: the controller counts
// its RPCs to slurmctld from them (--max-rpc-share). Saved-output reads
// are not commands and are not reported.

// CommandObserver is told each command's name (sinfo, squeue, scontrol,
// sdiag, sacctmgr) and arguments. It may be called from several
// goroutines at once.
type CommandObserver func(name string, args []string)

var observer atomic.Pointer[CommandObserver]

// ObserveCommands sets the process's observer (nil: none).
func ObserveCommands(f CommandObserver) {
	if f == nil {
		observer.Store(nil)
		return
	}
	observer.Store(&f)
}

func observeCommand(name string, args []string) {
	if f := observer.Load(); f != nil {
		(*f)(name, args)
	}
}
