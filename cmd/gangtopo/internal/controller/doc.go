// Package controller is the controller role of `gangtopo daemon`: every
// interval it polls Slurm, builds the occupancy snapshot of the topology's
// nodes and publishes it atomically where the job_submit plugin reads it.
//
// One cycle:
//
//  1. Re-read the topology file if it changed (a bad new file keeps the
//     old topology; the error is counted under stage "topology").
//  2. Poll Slurm (slurmstate.Poller): the node and job commands run at once,
//     each killed after its timeout; a job listing not back a third of the
//     interval after the poll started is left running and the poll goes on
//     with the last one back (slurmstate's jobsbehind.go). A failing,
//     hanging or garbled command fails the cycle under its own stage label.
//  3. Build the snapshot (slurmstate.BuildSnapshot); log the disagreements
//     with the topology when they change.
//  4. Publish it (publish.WriteSnapshot) with a generation above the last.
//  5. Update the metrics, including the fragmentation gauges computed by
//     the engine's frag package; with --max-rpc-share, about every six
//     intervals read sdiag and space the cycles out to hold the
//     controller's share of slurmctld's RPC time (rpcshare.go).
//  6. With gangtopo.yaml (--config), and a job listing the last duty round
//     did not see: re-bind the pending jobs whose binding went stale
//     (rebind.go), and the gangs requeued after a node failure (failure.go),
//     within its rate limits.
//
// A cycle that fails at any step publishes nothing: the previous snapshot
// stays in place, complete, and ages; gangtopo_snapshot_age_seconds shows
// it and the job_submit plugin ignores it once older than its bound.
package controller
