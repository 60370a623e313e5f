package e2e

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// reloadWait covers the plugin's reload_interval (50 ms) six times over,
// for a loaded machine.
const reloadWait = 300 * time.Millisecond

// reset cancels every job, waits for idle nodes and publishes a fresh
// snapshot, so a test starts from an empty cluster.
func reset(t *testing.T) {
	t.Helper()
	t0 := time.Now()
	if err := lab.CancelAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	// the plugin counts each decision's GPUs on top of snapshots taken
	// within pending_hold of it: a snapshot taken that long after the
	// cancel shows none of the earlier tests' jobs, held or not
	time.Sleep(time.Until(t0.Add(labPendingHold)))
	publish(t)
}

// publish writes the snapshot of the lab's current state with the
// product's own command (`gangtopo snapshot --from-slurm`, what the
// controller daemon does every few seconds) and waits until the plugin has
// re-read it.
func publish(t *testing.T) {
	t.Helper()
	out, err := gangtopo(t, "snapshot", "--from-slurm", "--topology", clusterFile, "-o", snapshotFile)
	if err != nil {
		t.Fatalf("gangtopo snapshot: %v\n%s", err, out)
	}
	time.Sleep(reloadWait)
}

// gangtopo runs the built gangtopo binary (GANGTOPO_BIN) against the lab.
func gangtopo(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("GANGTOPO_BIN")
	if bin == "" {
		t.Fatal("GANGTOPO_BIN is not set: run `make e2e`")
	}
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Env = lab.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// submit runs sbatch with a long sleep as the job and returns the job ID.
func submit(t *testing.T, args ...string) string {
	t.Helper()
	id, err := trySubmit(nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func trySubmit(env []string, args ...string) (string, error) {
	argv := append([]string{"-o", "/dev/null"}, args...)
	argv = append(argv, "--wrap", "sleep 100000")
	return lab.Submit(context.Background(), env, argv...)
}

// settle waits until the job runs, or pends with a stable reason.
func settle(t *testing.T, id string) *slurmlab.Job {
	t.Helper()
	j, err := lab.WaitSettled(context.Background(), id, 2*time.Second, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// running submits, waits and insists the job runs; then republishes the
// snapshot so the next decision sees it.
func running(t *testing.T, args ...string) *slurmlab.Job {
	t.Helper()
	j := settle(t, submit(t, args...))
	if j.State != "RUNNING" {
		t.Fatalf("job %s (%s) is %s (%s), want RUNNING", j.ID, strings.Join(args, " "), j.State, j.Reason)
	}
	publish(t)
	return j
}

// leavesOf maps a job's nodes to their leaves (lab16: 4 nodes per leaf).
func leavesOf(t *testing.T, j *slurmlab.Job) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for _, n := range j.Nodes {
		id, ok := lab.Cluster.NodeByName(n)
		if !ok {
			t.Fatalf("job %s runs on unknown node %s", j.ID, n)
		}
		c := lab.Cluster
		leaf := c.Domains[c.Nodes[id].Up[topology.TierLeaf]].Name
		if !seen[leaf] {
			seen[leaf] = true
			out = append(out, leaf)
		}
	}
	return out
}

// ctldLogSince returns what slurmctld logged after offset (a byte count
// from ctldLogSize).
func ctldLogSince(offset int64) string {
	data, err := os.ReadFile(lab.Path("log", "slurmctld.log"))
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	return string(data[offset:])
}

func ctldLogSize() int64 {
	fi, err := os.Stat(lab.Path("log", "slurmctld.log"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// ctxT is the context of a test's Slurm commands.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	return context.Background()
}

// fill submits one pinned job per entry (node -> GPUs), waits until all
// run and publishes the snapshot: the starting state of a scenario.
func fill(t *testing.T, gpus map[string]int) {
	t.Helper()
	var ids []string
	for _, node := range sortedKeys(gpus) {
		for k := gpus[node]; k > 0; {
			n := min(k, 8)
			ids = append(ids, submit(t, "-w", node, "--gpus="+itoa(n), "--cpus-per-gpu=1"))
			k -= n
		}
	}
	for _, id := range ids {
		if j := settle(t, id); j.State != "RUNNING" {
			t.Fatalf("filler job %s: %s (%s)", id, j.State, j.Reason)
		}
	}
	publish(t)
}

// fillOnes submits `count` 1-GPU jobs pinned to each node and waits.
func fillOnes(t *testing.T, count int, nodes ...string) {
	t.Helper()
	var ids []string
	for _, node := range nodes {
		for i := 0; i < count; i++ {
			ids = append(ids, submit(t, "-w", node, "--gpus=1", "--cpus-per-gpu=1"))
		}
	}
	for _, id := range ids {
		if j := settle(t, id); j.State != "RUNNING" {
			t.Fatalf("filler job %s: %s (%s)", id, j.State, j.Reason)
		}
	}
	publish(t)
}

// whole lists fully busy nodes (8 GPUs each).
func whole(nodes ...string) map[string]int {
	m := map[string]int{}
	for _, n := range nodes {
		m[n] = 8
	}
	return m
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// freeWholeNodes counts nodes with all 8 GPUs free, from Slurm's own view.
func freeWholeNodes(t *testing.T) []string {
	t.Helper()
	out, err := lab.Run(ctxT(t), 0, "sinfo", "-h", "-N", "-t", "idle", "-o", "%N")
	if err != nil {
		t.Fatal(err)
	}
	// one line per node and partition
	var nodes []string
	seen := map[string]bool{}
	for _, n := range strings.Fields(out) {
		if !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	return nodes
}
