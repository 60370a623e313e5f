// Package ctld is job_submit/gangtopo's runtime inside slurmctld, in pure
// Go (no cgo: spank/libgangtopo converts the C ABI of c/gangtopo_abi.h to
// and from it, and tests call it directly). The decision itself, a job in
// and a rewrite out, is selector/jobsubmit, which the simulators run too;
// this package owns what a decision inside slurmctld needs besides:
//
//	C shim (job_submit_gangtopo.c)      copies job_desc_msg_t fields, writes them
//	                                    to a pipe, waits deadline + 50 ms
//	  -> libgangtopo (cgo, recovers)    a goroutine reads the pipe: C <-> Go
//	  -> Holder                         the Gate in force; reloads gangtopo.yaml
//	  -> Gate.Submit                    jobsubmit.Prepare (scope, request)
//	       Store                        the snapshot, reloaded in the background,
//	                                    plus the GPUs of recent decisions (held)
//	       place.Engine                 selector/place, in a goroutine under a deadline
//	     jobsubmit.Rewrite              features, shape, exclusions, the decision line
//	  <- jobsubmit.Result
//
// Nothing here waits on I/O inside Submit: files are read by background
// goroutines (Store.Run, Holder.watch), a call only takes what they
// decoded. Every failure inside Submit (no usable snapshot, an engine error,
// panic or overrun) becomes on_failure's answer: the job untouched, or
// refused, with one log line.
package ctld
