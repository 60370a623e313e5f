// Package slurmstate reads a Slurm 22.05 cluster's live state from its
// command-line tools and turns it into an occupancy snapshot.
//
// Slurm 22.05 has no `scontrol --json`; the state comes from
//
//	sinfo --json              nodes: state, CPUs, memory, GRES configured and used
//	squeue --json             jobs: nodes, cores, memory, per-node GPU indices (gres_detail)
//	scontrol -a -d -o show node   the same node facts as text (one line per node)
//	scontrol -a -d show job       the same job facts as text (Nodes= ... GRES=gpu:4(IDX:0-3))
//
// A poll reads one node source and one job source (Poll), by running the
// commands with a timeout or by reading their saved output from files; a
// Poller with PollConfig.JobsWait lets a slow job listing run beside its
// polls (jobsbehind.go). Poller.ReadRPCStats reads sdiag's RPC counters
// by message type (sdiag.go), for the controller's --max-rpc-share. The
// parsers (ParseSinfoJSON, ParseSqueueJSON, ParseScontrolNodes,
// ParseScontrolJobs) are strict about what they need and lenient about what
// they do not: a missing, mistyped or unknown value in a field the snapshot
// uses is an error naming the command, the record and the field; fields the
// snapshot does not use are skipped, so Slurm may add fields. The JSON
// sources are scanned in place (jsonscan.go) rather than with encoding/json,
// which is too slow for the daemon's budget on a 4,096-node cluster.
//
// Node states map to the engine's idle/mixed/alloc/drain/down/unknown as
// documented in state.go. BuildSnapshot combines a poll with a topology,
// taking the conservative side wherever Slurm's outputs or the topology
// disagree, and lists every disagreement in a Report.
//
// A job's --gang-topology request is not in Slurm's job records as such; it
// is read from the decision line the job_submit plugin writes into the
// job's AdminComment, which users cannot set (decisions.go). The same lines,
// over every job listed, are counted by verdict and cause (Decisions).
package slurmstate
