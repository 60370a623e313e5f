// Package occupancy is the per-decision state of a cluster: which GPUs,
// CPUs and memory are free on which nodes, the nodes' Slurm states and the
// running jobs.
//
// A Snapshot is a set of flat arrays indexed by the dense IDs of a
// topology.Cluster, so the engine reads a node's free GPUs with two slice
// loads and the simulator applies or releases an allocation in place.
// GPU capacity is counted in milli-GPUs (1000 = one whole GPU), which holds
// whole-GPU Slurm jobs, Slurm shards and the fractional requests of the
// Alibaba traces alike.
//
// The sidecar daemon publishes snapshots as JSON (version v1, see
// docs/snapshot-format.md); Decode reads them strictly, against the
// cluster they describe. Tests build snapshots in code with New, Allocate
// and SetState.
package occupancy
