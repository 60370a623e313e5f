package slurmlab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A lab at the size of a site (hundreds to a thousand emulated nodes, tens
// of thousands of jobs) hits limits a 16-node lab never sees, before Slurm
// does; the lab raises or checks each of them at start:
//
//   - open files: slurmctld holds a socket per node it talks to at once and
//     the lab's own process one per daemon's log; the soft limit is raised
//     to the hard one (and the hard one, as root, to openFilesFor), set
//     explicitly so that the daemons inherit it (Go raises its own soft
//     limit at start but gives children the original).
//   - processes and threads: every slurmd, and every running job's
//     slurmstepd and task, count against kernel.pid_max and
//     kernel.threads-max; the lab does not change the kernel's settings of
//     a shared machine, it fails when they cannot hold the lab.
//   - Slurm's own: MaxJobCount (default 10,000 jobs in slurmctld's memory)
//     and MaxArraySize (default 1,001 tasks), from Options.MaxJobCount and
//     Options.MaxArraySize.
//
// The slurmds start in batches (Options.StartBatch): each batch is
// started, then the lab waits until its nodes have registered before it
// starts the next, so slurmctld is not asked to register a thousand nodes
// at once on a small machine.

// threadsPerNode is what one idle emulated node costs in kernel tasks
// (slurmd's threads, the sh that set up its mount namespace is gone by
// then): measured about 3, counted with room.
const threadsPerNode = 6

// raiseLimits raises the open-files limit the lab's daemons inherit and
// checks that the kernel can hold nodes emulated nodes.
func raiseLimits(nodes int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("open files limit: %w", err)
	}
	want := openFilesFor(nodes)
	if lim.Max < want && os.Geteuid() == 0 {
		lim.Max = want
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raising the open files limit to %d: %w", lim.Max, err)
	}
	if lim.Cur < want {
		return fmt.Errorf("the open files limit is %d, a lab of %d nodes needs %d: raise it (ulimit -n) or run as root", lim.Cur, nodes, want)
	}
	need := nodes*threadsPerNode + 4096
	for _, k := range []string{"pid_max", "threads-max"} {
		have, err := kernelLimit(k)
		if err == nil && have < need {
			return fmt.Errorf("kernel.%s is %d; a lab of %d nodes needs at least %d tasks (raise it with sysctl kernel.%s=%d)", k, have, nodes, need, k, 4*need)
		}
	}
	return nil
}

// openFilesFor is the open-files limit a lab of nodes nodes is given:
// four per node (slurmctld's connections and the lab's log files) and
// room for the jobs.
func openFilesFor(nodes int) uint64 { return uint64(max(4*nodes+4096, 8192)) }

// kernelLimit reads /proc/sys/kernel/<name>.
func kernelLimit(name string) (int, error) {
	data, err := os.ReadFile("/proc/sys/kernel/" + name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// registerWait is how long the lab waits for n nodes to register: 30 s and
// 60 ms a node (a 1,024-node lab registered in about a minute here).
func registerWait(n int) time.Duration { return 30*time.Second + time.Duration(n)*60*time.Millisecond }

// StartBatch is how many slurmds start at a time: Options.StartBatch, or
// every node at once.
func (l *Lab) StartBatch() int {
	if b := l.opts.StartBatch; b > 0 {
		return b
	}
	return len(l.Cluster.Nodes)
}

// waitRegistered waits until every node among the first n of the cluster
// is out of Slurm's unknown and not-responding states (idle, with nothing
// running yet).
func (l *Lab) waitRegistered(ctx context.Context, n int) error {
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		want[l.Cluster.Nodes[i].Name] = true
	}
	var left int
	err := waitFor(ctx, registerWait(n), fmt.Sprintf("%d nodes to register", n), func() bool {
		state, _, err := l.nodeStates(ctx, 30*time.Second)
		if err != nil {
			return false
		}
		left = len(want)
		for n := range want {
			if idle(state[n]) {
				left--
			}
		}
		return left == 0
	})
	if err != nil {
		return fmt.Errorf("%w (%d of them not idle)", err, left)
	}
	return nil
}

// Usage is what the lab's processes hold: how many there are (daemons,
// slurmstepds, job tasks) and their resident memory, in all and for the
// slurmds and slurmctld.
type Usage struct {
	Procs              int
	RSSKiB             int64
	Slurmds            int
	SlurmdKiB, CtldKiB int64
}

// Usage reads /proc for every process of the lab (by its marker).
func (l *Lab) Usage() Usage {
	var u Usage
	for _, pid := range marked(l.Dir) {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		var name string
		var rss int64
		for _, line := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch k {
			case "Name":
				name = strings.TrimSpace(v)
			case "VmRSS":
				rss, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
		u.Procs++
		u.RSSKiB += rss
		switch name {
		case "slurmd":
			u.Slurmds++
			u.SlurmdKiB += rss
		case "slurmctld":
			u.CtldKiB = max(u.CtldKiB, rss)
		}
	}
	return u
}
