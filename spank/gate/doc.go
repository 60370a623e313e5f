// Package gate is the logic of job_submit/gangtopo, the placement step
// inside slurmctld, in pure Go (no cgo: spank/libgangtopo converts the C
// ABI of c/gangtopo_abi.h to and from it, and tests call it directly).
//
//	C shim (job_submit_gangtopo.c)      copies job_desc_msg_t fields, writes them
//	                                    to a pipe, waits deadline + 50 ms
//	  -> libgangtopo (cgo, recovers)    a goroutine reads the pipe: C <-> Go
//	  -> Holder                         the Gate in force; reloads gangtopo.yaml
//	  -> Gate.Submit                    scope -> request -> snapshot -> engine -> rewrite
//	       Store                        the snapshot, reloaded in the background,
//	                                    plus the GPUs of recent decisions (held)
//	       place.Engine                 selector/place, in a goroutine under a deadline
//	  <- Result                         features, shape, exclusions, the decision line
//
// Nothing here waits on I/O inside Submit: files are read by background
// goroutines (Store.Run, Holder.watch), a call only takes what they
// decoded. Every failure inside Submit (no usable snapshot, an engine error,
// panic or overrun) becomes on_failure's answer: the job untouched, or
// refused, with one log line.
//
// The rewrite binds gangs to topology domains through node features
// (gt_<domain>, DomainFeature) rather than to node lists, because node
// lists go stale between submit and start; rewrite.go explains the choice.
// The decision is written into the job as one line (Decision) that
// `gangtopo why` reads back.
package gate
