package slurmstate

import (
	"sort"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/occupancy"
)

// Node is what Slurm reports about one node.
type Node struct {
	Name string
	// State is the occupancy state SlurmState maps to (see MapState).
	State      occupancy.NodeState
	SlurmState string // as Slurm wrote it: "MIXED+DRAIN", "idle" (sinfo: base and flags joined by '+')
	CPUs       int    // configured CPUs
	AllocCPUs  int
	Threads    int   // threads per core; 0 when not reported
	MemoryMiB  int64 // RealMemory
	AllocMiB   int64
	GPUs       int      // configured GPUs (the gpu GRES count)
	GPUTypes   []string // typed GRES names, e.g. "h100"; empty when untyped
	GPUsUsed   int
	// GPUUsedIdx lists the busy GPUs' indices when Slurm printed them
	// (GresUsed=gpu:h100:4(IDX:0-3)); UsedIdxKnown says it did.
	GPUUsedIdx   []int
	UsedIdxKnown bool
	// ShardsPerGPU is the node's configured shard count divided by its GPUs
	// (Slurm spreads shards evenly when gres.conf gives no files); 0 when
	// the node has no shards.
	ShardsPerGPU int
	Features     []string // active features
	Partitions   []string
	Reason       string
}

// Job is a job that holds resources (running, suspended, completing, ...).
type Job struct {
	ID        string
	User      string
	Partition string
	State     string // Slurm's job state, e.g. RUNNING
	NodeList  string // host list expression
	CPUs      int
	Nodes     []JobNode
	// GangTopology is the job's --gang-topology request as the job_submit
	// plugin's decision line in its AdminComment records it (see
	// requestFrom); empty without one.
	GangTopology string
	// Models are the GPU models the job accepts, from the same decision
	// line; empty without one, or when the job named none.
	Models []string
	// FromText says the job was read from scontrol's text, where users'
	// free text (job names, comments) is printed unescaped among Slurm's
	// own lines and can forge them: BuildSnapshot believes its claims only
	// where the node's own counts confirm them.
	FromText bool
	// Facts are the rest of what Slurm says about the job (facts.go).
	Facts JobFacts
}

// JobNode is a job's share of one node.
type JobNode struct {
	Name string
	// GPUs lists the GPU indices (from "gpu:4(IDX:0-3)"); GPUCount is the
	// count, which is all Slurm prints for GPUs bound to no device file
	// ("gpu(CNT:4)").
	GPUs     []int
	GPUCount int
	// Shards maps a GPU index to the shards the job holds on it.
	Shards map[int]int
	// CPUs is the CPU count when the source gives it (scontrol's CPU_IDs);
	// squeue --json gives cores, which Cores holds and the snapshot builder
	// multiplies by the node's threads per core.
	CPUs   int
	Cores  int
	MemMiB int64
}

// State is one poll's worth of Slurm output, parsed.
type State struct {
	Nodes []Node
	Jobs  []Job
	// Unreadable lists the job records of scontrol's text that did not
	// parse, left out (a job's free text can break the layout).
	Unreadable []Unreadable
	// Version is Slurm's release, e.g. "22.05.8", when the output says.
	Version string
	// NodesFrom is the source the nodes were read from (a PollConfig with
	// NodesAuto picks it).
	NodesFrom Source
	// Decisions counts the gangtopo decisions of every job listed, not only
	// the ones holding resources.
	Decisions Decisions
	// Pending lists the pending jobs with a gangtopo decision (squeue
	// --json only; pending.go).
	Pending []PendingJob
	// Queued lists every pending job, with a decision or not (squeue
	// --json only).
	Queued []PendingJob
	// Requeuing lists the jobs with a gangtopo decision that Slurm is
	// requeueing: pending with the COMPLETING flag (23.02 and later list
	// it; squeue --json only). Their nodes are still theirs (they are in
	// Jobs too) until Slurm finishes the requeue; under an expedited
	// requeue, or while slurm.conf's EpilogSlurmctld runs, Slurm waits with
	// it, and a change made now is the one the job starts with.
	Requeuing []PendingJob
	// PendingListed says the jobs were read from squeue --json, so Pending
	// lists every pending job with a decision (scontrol's text does not).
	PendingListed bool
	// JobsAge is how long before the poll the job listing started (0 when
	// it started with the poll); JobsFresh says it is the first poll to use
	// it: a poll with PollConfig.JobsWait may go on with an earlier one
	// (jobsbehind.go).
	JobsAge   time.Duration
	JobsFresh bool
}

// holdingStates are the job states in which a job holds its allocation
// (src/common/slurm_protocol_defs.c, job_state_string; flags print before
// the base state). Every other known state holds nothing.
var holdingStates = map[string]bool{
	"RUNNING": true, "SUSPENDED": true, "COMPLETING": true, "CONFIGURING": true,
	"RESIZING": true, "STOPPED": true, "SIGNALING": true, "STAGE_OUT": true,
}

var idleJobStates = map[string]bool{
	"PENDING": true, "COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true,
	"NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
	"OUT_OF_MEMORY": true, "REQUEUED": true, "REQUEUE_FED": true, "REQUEUE_HOLD": true,
	"SPECIAL_EXIT": true, "REVOKED": true, "RESV_DEL_HOLD": true,
}

// jobHolds reports whether a job in state st holds resources; ok is false
// for a state Slurm 22.05 does not have.
func jobHolds(st string) (holds, ok bool) {
	st = strings.ToUpper(st)
	if holdingStates[st] {
		return true, true
	}
	return false, idleJobStates[st]
}

func sortedUnique(xs []int) []int {
	if len(xs) < 2 {
		return xs
	}
	sort.Ints(xs)
	out := xs[:1]
	for _, x := range xs[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "(null)" {
			out = append(out, f)
		}
	}
	return out
}
