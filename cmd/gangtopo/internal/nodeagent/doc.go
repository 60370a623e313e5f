// Package nodeagent is the node role of `gangtopo daemon`: it runs
// discovery on an interval and publishes the node map (to a directory the
// controller reads, usually on a shared file system) and the node file (read
// by the SPANK plugin in slurmstepd for NCCL_IB_HCA and GANGTOPO_*; built by
// discovery.BuildNodeFile, rendered by spank/nodefile), each replaced
// atomically so a reader never sees a half-written file.
//
// A failed discovery publishes nothing: the files from the last good run
// stay, the error is logged and counted, and the next interval tries again.
package nodeagent
