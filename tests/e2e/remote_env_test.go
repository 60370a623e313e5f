package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func init() {
	register("RemoteContextEnvironment", testRemoteContextEnvironment)
	register("RemoteContextAcrossLeavesWithoutOption", testRemoteContextAcrossLeavesWithoutOption)
	register("RemoteRequestFromEnvironment", testRemoteRequestFromEnvironment)
}

// testRemoteContextEnvironment checks what the SPANK plugin exports to the
// tasks, in C inside slurmstepd, from the node files of the lab: for the
// batch step (all 8 GPUs of node01) and for srun steps on two nodes of
// leaf1 (GPUs 0-1 each, nearest NIC mlx5_0) and on one node. Each node
// sees only its own file (its node-local directory, Lab.NodeFileDir): the
// two-node step's GANGTOPO_TIER comes from the member lists in that file.
func testRemoteContextEnvironment(t *testing.T) {
	reset(t)
	out := filepath.Join(lab.Dir, "state", "remote-env")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	const vars = `env | grep -E "^(CUDA_DEVICE_ORDER|NCCL_IB_HCA|GANGTOPO_[A-Z_]+)=" | grep -v GANGTOPO_LAB | sort`
	script := strings.Join([]string{
		vars + " > " + out + "/batch",
		"srun -N2 -n2 --gpus-per-node=2 bash -c '" + vars + " > " + out + "/step2.$SLURMD_NODENAME'",
		"srun -N1 -n1 --gpus-per-node=2 bash -c '" + vars + " > " + out + "/step1'",
	}, "\n")
	id, err := lab.Submit(ctxT(t), nil, "-o", filepath.Join(out, "job.out"), "-w", "node[01-02]", "-N2",
		"--gpus-per-node=8", "--gang-topology=leaf:preferred,slice=8", "--wrap", script)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, id, 30*time.Second)
	want := map[string][]string{
		// the batch step holds node01's 8 GPUs: every NIC is near one of them
		"batch": {"CUDA_DEVICE_ORDER=PCI_BUS_ID", "GANGTOPO_DOMAIN=leaf1", "GANGTOPO_LEAF=leaf1",
			"GANGTOPO_NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3", "GANGTOPO_REQUEST=leaf:preferred,slice=8",
			"GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=leaf", "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3"},
		// GPUs 0-1 on each node: mlx5_0 serves GPUs 0-1 (lab16.yaml)
		"step2.node01": {"CUDA_DEVICE_ORDER=PCI_BUS_ID", "GANGTOPO_DOMAIN=leaf1", "GANGTOPO_LEAF=leaf1",
			"GANGTOPO_NCCL_IB_HCA==mlx5_0", "GANGTOPO_REQUEST=leaf:preferred,slice=8", "GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=leaf", "NCCL_IB_HCA==mlx5_0"},
		"step2.node02": {"CUDA_DEVICE_ORDER=PCI_BUS_ID", "GANGTOPO_DOMAIN=leaf1", "GANGTOPO_LEAF=leaf1",
			"GANGTOPO_NCCL_IB_HCA==mlx5_0", "GANGTOPO_REQUEST=leaf:preferred,slice=8", "GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=leaf", "NCCL_IB_HCA==mlx5_0"},
		// one node, two GPUs of one NVSwitch island
		"step1": {"CUDA_DEVICE_ORDER=PCI_BUS_ID", "GANGTOPO_DOMAIN=node01/nvl0", "GANGTOPO_LEAF=leaf1",
			"GANGTOPO_NCCL_IB_HCA==mlx5_0", "GANGTOPO_REQUEST=leaf:preferred,slice=8", "GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=nvlink", "NCCL_IB_HCA==mlx5_0"},
	}
	for file, w := range want {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			job, _ := os.ReadFile(filepath.Join(out, "job.out"))
			t.Fatalf("%v; job output:\n%s", err, job)
		}
		got := strings.Fields(string(data))
		sort.Strings(got)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
}

// A job that did not ask for gangtopo gets the GANGTOPO_* facts but not
// CUDA_DEVICE_ORDER or NCCL_IB_HCA (set_env=gang, the default); a step over
// two leaves of spine1, on nodes that each have only their own node file,
// sees the spine.
func testRemoteContextAcrossLeavesWithoutOption(t *testing.T) {
	reset(t)
	out := filepath.Join(lab.Dir, "state", "remote-env-noopt")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	const vars = `env | grep -E "^(CUDA_DEVICE_ORDER|NCCL_IB_HCA|GANGTOPO_[A-Z_]+)=" | grep -v GANGTOPO_LAB | sort`
	script := "srun -N2 -n2 --gpus-per-node=1 bash -c '" + vars + " > " + out + "/step.$SLURMD_NODENAME'"
	id, err := lab.Submit(ctxT(t), nil, "-o", filepath.Join(out, "job.out"), "-w", "node04,node05", "-N2",
		"--gpus-per-node=1", "--wrap", script)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, id, 30*time.Second)
	want := map[string][]string{
		"step.node04": {"GANGTOPO_DOMAIN=spine1", "GANGTOPO_LEAF=leaf1", "GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=spine"},
		"step.node05": {"GANGTOPO_DOMAIN=spine1", "GANGTOPO_LEAF=leaf2", "GANGTOPO_SPINE=spine1", "GANGTOPO_TIER=spine"},
	}
	for file, w := range want {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			job, _ := os.ReadFile(filepath.Join(out, "job.out"))
			t.Fatalf("%v; job output:\n%s", err, job)
		}
		got := strings.Fields(string(data))
		sort.Strings(got)
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
}

// testRemoteRequestFromEnvironment: a job whose option came from
// GANGTOPO_TOPOLOGY (not the command line) still sees GANGTOPO_REQUEST.
func testRemoteRequestFromEnvironment(t *testing.T) {
	reset(t)
	out := filepath.Join(lab.Dir, "state", "remote-env-default")
	id, err := lab.Submit(ctxT(t), []string{"GANGTOPO_TOPOLOGY=node:preferred"}, "-o", out, "--gpus=2",
		"--wrap", "env | grep ^GANGTOPO_REQUEST=")
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, id, 30*time.Second)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != "GANGTOPO_REQUEST=node:preferred" {
		t.Errorf("batch step sees %q, want GANGTOPO_REQUEST=node:preferred", got)
	}
}

// waitGone waits until a job has left the queue (completed or failed).
func waitGone(t *testing.T, id string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		out, err := lab.Run(ctxT(t), 0, "squeue", "-h", "-j", id, "-o", "%T")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	job, _ := lab.Run(ctxT(t), 0, "scontrol", "show", "job", id)
	nodes, _ := lab.Run(ctxT(t), 0, "sinfo", "-h", "-N", "-o", "%N %T %E")
	queue, _ := lab.Run(ctxT(t), 0, "squeue", "-h", "-o", "%i %T %R %N")
	// the daemons' side: slurmctld's, and the slurmd's of each node the
	// job still holds
	logs := "slurmctld:\n" + lab.LogTail("slurmctld.log", 30)
	if held, _ := lab.Run(ctxT(t), 0, "squeue", "-h", "-j", id, "-o", "%N"); strings.TrimSpace(held) != "" {
		if names, err := lab.Run(ctxT(t), 0, "scontrol", "show", "hostnames", strings.TrimSpace(held)); err == nil {
			for _, n := range strings.Fields(names) {
				logs += "\nslurmd " + n + ":\n" + lab.LogTail("slurmd-"+n+".log", 30)
			}
		}
	}
	t.Fatalf("job %s still queued after %v:\n%s\nnodes:\n%s\nqueue:\n%s\n%s", id, limit, job, nodes, queue, logs)
}
