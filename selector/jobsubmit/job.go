package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"
)

// Job is what gangtopo reads of a submitted job (job_desc_msg_t, copied
// field by field by the C shim). Empty strings and zero counts mean "not
// given".
type Job struct {
	UserID    uint32
	Name      string
	Partition string // as submitted; "" without -p
	// DefaultPartition is slurmctld's default partition, where Slurm puts
	// a job submitted without -p (the shim reads it from slurmctld).
	DefaultPartition string
	GangTopology     string // GANG_TOPOLOGY from the SPANK plugin
	// GangTopologyFromEnv says GangTopology is the user's default from
	// $GANGTOPO_TOPOLOGY rather than an explicit --gang-topology: it
	// applies to the jobs it fits and never gets a job refused for not
	// fitting it (a CPU job, a partition gangtopo does not place).
	GangTopologyFromEnv bool
	// GPU requests, Slurm's TRES strings: --gpus gives TresPerJob
	// ("gres:gpu:h100:16"), --gpus-per-node and --gres give TresPerNode,
	// --gpus-per-socket TresPerSocket, --gpus-per-task TresPerTask.
	TresPerJob    string
	TresPerNode   string
	TresPerSocket string
	TresPerTask   string
	CPUsPerTres   string // --cpus-per-gpu: "gres:gpu:4"
	MemPerTres    string // --mem-per-gpu: "gres:gpu:1024" (MiB)
	Features      string
	Prefer        string
	ReqNodes      string
	ExcNodes      string
	Comment       string
	AdminComment  string // set by an administrator or an earlier job_submit plugin
	MinNodes      uint32
	MaxNodes      uint32
	// SegmentSize is Slurm's --segment (24.05+, topology/block): nodes of
	// the job that share one block; 0 when not given.
	SegmentSize   uint32
	NumTasks      uint32
	NtasksPerNode uint16
	CPUsPerTask   uint16
	MinCPUs       uint32
	PnMinMemory   uint64 // MiB per node; with memPerCPU set, per CPU
	// ArrayInx is a job array's task list as sbatch --array gives it
	// ("0-49%5"; tasks.go): every task is a job to the engine. "" for a
	// job that is not an array.
	ArrayInx string
	// HetJob says the job is component HetOffset of a heterogeneous job:
	// Slurm calls job_submit once per component, each a job of its own
	// (hetjob.go).
	HetJob    bool
	HetOffset uint32

	// How Slurm counts the job's resources beyond tasks and CPUs per task
	// (options.go says what gangtopo makes of each). Zero values mean "not
	// given".
	Overcommit     bool    // --overcommit: tasks may share CPUs
	Shared         Sharing // --exclusive[=user|mcs|topo], --oversubscribe
	MemWholeNode   bool    // --mem=0: all of each node's memory
	Contiguous     bool    // --contiguous
	SpreadJob      bool    // --spread-job
	ReqSwitch      uint32  // --switches=N: at most N leaf switches
	PnMinCPUs      uint16  // --mincpus: CPUs per node at least
	NtasksPerTres  uint16  // --ntasks-per-gpu
	ThreadsPerCore uint16  // --threads-per-core (--hint=nomultithread: 1)
	NtasksPerCore  uint16  // --ntasks-per-core
	// the socket and core layout: --sockets-per-node, --cores-per-socket,
	// --ntasks-per-socket
	SocketsPerNode, CoresPerSocket, NtasksPerSocket uint16
}

// memPerCPU is Slurm's MEM_PER_CPU flag in pn_min_memory.
const memPerCPU = uint64(1) << 63

// gpuTres is one GPU entry of a TRES string.
type gpuTres struct {
	Model string // "" for untyped
	Count int
}

// parseGPUTres finds the GPU entry in a TRES list such as
// "gres:gpu:h100:16,gres:nic:1" (or "gpu:16"): ok is false when there is
// none. Several GPU entries (two models) are an error gangtopo does not
// handle.
func parseGPUTres(s string) (t gpuTres, ok bool, err error) {
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimPrefix(strings.TrimSpace(item), "gres:")
		item = strings.TrimPrefix(item, "gres/")
		if item != "gpu" && !strings.HasPrefix(item, "gpu:") && !strings.HasPrefix(item, "gpu=") {
			continue
		}
		if ok {
			return gpuTres{}, false, fmt.Errorf("more than one GPU request in %q", s)
		}
		ok = true
		t, err = parseGPUItem(item)
		if err != nil {
			return gpuTres{}, false, fmt.Errorf("GPU request %q: %w", s, err)
		}
	}
	return t, ok, nil
}

// parseGPUItem reads "gpu", "gpu:16", "gpu:h100:16", "gpu=16" or
// "gpu:h100" (count 1, as Slurm reads it).
func parseGPUItem(item string) (gpuTres, error) {
	rest := strings.TrimPrefix(strings.TrimPrefix(item, "gpu"), ":")
	rest = strings.TrimPrefix(rest, "=")
	if rest == "" {
		return gpuTres{Count: 1}, nil
	}
	f := strings.Split(rest, ":")
	switch len(f) {
	case 1:
		if n, err := strconv.Atoi(f[0]); err == nil {
			return gpuTres{Count: n}, checkCount(n)
		}
		return gpuTres{Model: f[0], Count: 1}, nil
	case 2:
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return gpuTres{}, fmt.Errorf("count %q is not a number", f[1])
		}
		return gpuTres{Model: f[0], Count: n}, checkCount(n)
	}
	return gpuTres{}, fmt.Errorf("want gpu[:TYPE][:COUNT]")
}

func checkCount(n int) error {
	if n < 0 || n > 1<<20 {
		return fmt.Errorf("count %d out of range", n)
	}
	return nil
}

// perGPU reads a "gres:gpu:N" entry of cpus_per_tres or mem_per_tres.
func perGPU(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t, ok, err := parseGPUTres(s)
	if err != nil || !ok {
		return 0, err
	}
	return int64(t.Count), nil
}

// withoutCPUTres is j with the CPU entry of TresPerTask taken out: from
// Slurm 23.02 on, -c/--cpus-per-task is also recorded there ("cpu=40", or
// "cpu:40"), which is no GRES and would make a CPU job look like a job
// with other GRES. CPUsPerTask takes its count when Slurm left it unset.
// The job's own TresPerTask is not rewritten (Apply never writes it).
func (j Job) withoutCPUTres() Job {
	if j.TresPerTask == "" {
		return j
	}
	var keep []string
	for _, item := range strings.Split(j.TresPerTask, ",") {
		name, count, found := strings.Cut(strings.TrimSpace(item), "=")
		if !found {
			name, count, found = strings.Cut(strings.TrimSpace(item), ":")
		}
		if n, err := strconv.ParseUint(count, 10, 16); found && name == "cpu" && err == nil {
			if j.CPUsPerTask == 0 {
				j.CPUsPerTask = uint16(n)
			}
			continue
		}
		keep = append(keep, item)
	}
	j.TresPerTask = strings.Join(keep, ",")
	return j
}
