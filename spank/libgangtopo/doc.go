// Command libgangtopo is built with -buildmode=c-shared into libgangtopo.so,
// the Go core that job_submit_gangtopo.so (C, c/) links inside slurmctld.
// It exports the C ABI declared in c/gangtopo_abi.h and nothing else (the
// linker version script c/libgangtopo.lds hides the Go runtime's symbols):
// gt_init and gt_fini are calls; jobs come over a pipe to a goroutine
// (server.go), never as a call from slurmctld's thread, because each such
// callback leaves slurmctld's thread to the Go runtime's monitor for up to
// 10 ms (gangtopo_abi.h says why; docs/benchmarks.md has the measurements).
//
// Every exported function and every answer recovers panics: no Go panic
// ever crosses into slurmctld. The logic lives in pure-Go packages
// (spank/ctld, the runtime; selector/jobsubmit, the decision); this package
// only moves jobs and answers between C memory and Go (wire.go).
package main
