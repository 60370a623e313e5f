// Command gangtopo is the command-line face of the gangtopo placement
// engine: fragmentation reports, placement dry runs, the trace simulator,
// configuration generators and the sidecar daemon.
package main
