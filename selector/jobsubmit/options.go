package jobsubmit

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/request"
)

// Slurm's resource options, and what the decision makes of each.
//
// gangtopo must never refuse a job stock Slurm runs, nor rewrite one into
// a job Slurm cannot run. So every option that changes how Slurm counts a
// job's resources is either modelled (the engine places the job as Slurm
// will count it) or the job passes to Slurm as submitted, with the
// decision and a log line naming the option (CauseUnsupported). Under
// jobs: all (docs/admin.md, "Slurm's resource options"):
//
//	-n, -c, --ntasks-per-node,   counted: tasks x CPUs per task, at least
//	--mincpus, --ntasks-per-gpu  --mincpus per node (slurmcount.go)
//	--overcommit                 counted in full (tasks x CPUs per task): a
//	                             node with that room always starts it; when
//	                             no node has it, passed (Slurm overcommits)
//	--oversubscribe              placed: GPUs are never shared, and the
//	                             job's CPUs counted as its own is what the
//	                             partition's OverSubscribe=NO enforces
//	--exclusive                  placed on nodes with nothing allocated
//	--exclusive=user|mcs|topo    passed: whose jobs run where is not in the
//	                             snapshot
//	--mem=0                      placed on nodes with all memory free
//	--mem, --mem-per-cpu,        counted; refused only when one node's
//	--mem-per-gpu                share exceeds every node (slurmNever)
//	--cpus-per-gpu               counted per GPU
//	--threads-per-core,          placed when every node has one thread per
//	--ntasks-per-core, --hint    core and the value is 1; passed otherwise
//	--sockets-per-node,          passed: gangtopo knows no sockets
//	--cores-per-socket,
//	--ntasks-per-socket,
//	--gpus-per-socket
//	--gpus, --gpus-per-node,     placed (--gres=gpu[:type][:N] as
//	--gres                       --gpus-per-node)
//	--gpus-per-task              placed in whole tasks per node
//	-N min-max, --spread-job     passed: Slurm chooses the node count
//	--contiguous                 placed on one node; passed over several
//	--switches                   placed: Slurm applies the switch count
//	                             inside gangtopo's binding
//
// A job the engine finds can never fit because of its CPUs or memory is
// refused only when Slurm's own counting says so too (slurmNever); else it
// passes (Rewrite).

// Sharing is how a job shares its nodes (Slurm's job_desc shared; the
// ABI's enum gt_shared).
type Sharing uint8

// Sharing modes.
const (
	SharedDefault       Sharing = iota // as the partition's OverSubscribe says
	SharedExclusive                    // --exclusive: whole nodes
	SharedOversubscribe                // --oversubscribe
	SharedUser                         // --exclusive=user
	SharedMCS                          // --exclusive=mcs
	SharedTopo                         // --exclusive=topo (Slurm 25.05+)
	SharedOther                        // a mode of a later Slurm
)

// unmodelled is the error for the first option of j whose counting
// gangtopo does not model (nil when none): the job passes as submitted.
// Options that only matter once the request is known (--contiguous) are
// checked by unmodelledShape.
func (dc *Decider) unmodelled(j Job) error {
	pass := func(what, why string) error { return &unsupportedError{what: what, why: why} }
	switch {
	case j.TresPerSocket != "":
		return pass("--gpus-per-socket", "")
	case j.MaxNodes > j.MinNodes && j.MinNodes > 0:
		return pass(fmt.Sprintf("a node count range (-N %d-%d)", j.MinNodes, j.MaxNodes), "")
	case j.SpreadJob:
		return pass("--spread-job", "Slurm spreads the job over as many nodes as it may, gangtopo packs it")
	case j.Shared >= SharedUser:
		return pass(j.Shared.option(), "which nodes hold whose jobs is not in gangtopo's snapshot")
	case j.SocketsPerNode+j.CoresPerSocket+j.NtasksPerSocket > 0:
		return pass(socketOptions(j), "gangtopo does not know the nodes' sockets and cores")
	case !dc.oneThreadPerCore(j):
		return pass("--threads-per-core or --ntasks-per-core (or --hint)",
			"Slurm then counts whole cores, and gangtopo counts CPUs")
	}
	return nil
}

// unmodelledShape is unmodelled for the options that depend on the
// request: --contiguous over several nodes (Slurm's node order is not the
// topology's).
func unmodelledShape(j Job, r request.Request) error {
	if j.Contiguous && r.Nodes != 1 {
		return &unsupportedError{what: "--contiguous over several nodes", why: "gangtopo's domains do not follow Slurm's node order"}
	}
	return nil
}

// oneThreadPerCore says whether --threads-per-core and --ntasks-per-core
// leave Slurm's count of CPUs as gangtopo makes it: not given, or 1 on a
// cluster whose nodes all have one thread per core (a core is a CPU).
func (dc *Decider) oneThreadPerCore(j Job) bool {
	if j.ThreadsPerCore == 0 && j.NtasksPerCore == 0 {
		return true
	}
	if j.ThreadsPerCore > 1 || j.NtasksPerCore > 1 {
		return false
	}
	for i := range dc.cluster.Nodes {
		if dc.cluster.Nodes[i].ThreadsPerCore > 1 {
			return false
		}
	}
	return true
}

// socketOptions names the socket and core layout options j gives.
func socketOptions(j Job) string {
	var opts []string
	for _, o := range []struct {
		v    uint16
		name string
	}{{j.SocketsPerNode, "--sockets-per-node"}, {j.CoresPerSocket, "--cores-per-socket"}, {j.NtasksPerSocket, "--ntasks-per-socket"}} {
		if o.v > 0 {
			opts = append(opts, o.name)
		}
	}
	return strings.Join(opts, " and ")
}

// option names the sbatch option that sets s.
func (s Sharing) option() string {
	switch s {
	case SharedExclusive:
		return "--exclusive"
	case SharedOversubscribe:
		return "--oversubscribe"
	case SharedUser:
		return "--exclusive=user"
	case SharedMCS:
		return "--exclusive=mcs"
	case SharedTopo:
		return "--exclusive=topo"
	case SharedOther:
		return "a sharing mode of this Slurm (job_desc shared)"
	}
	return ""
}
