// Command libgangtopo is built with -buildmode=c-shared into libgangtopo.so,
// the Go core that job_submit_gangtopo.so (C, c/) links inside slurmctld.
// It exports the C ABI declared in c/gangtopo_abi.h and nothing else (the
// linker version script c/libgangtopo.lds hides the Go runtime's symbols).
//
// Every exported function recovers panics: no Go panic ever crosses into
// slurmctld. The logic lives in the pure-Go package spank/gate; this file
// only converts between C and Go.
package main
