package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() {
	register("NodeDaemonFileIsNodeLocal", testNodeDaemonFileIsNodeLocal)
}

// testNodeDaemonFileIsNodeLocal: every slurmd of the lab sees its own
// node-local directory as the plugin's nodefile_dir. The node daemon
// publishes node16's file there, with a shared node map directory it cannot
// use (owned by another user, as root's view of an NFS export with
// root_squash): the cycle succeeds, the node file is written, and a job step
// on node16 reads it, while the other nodes' directories keep their own.
func testNodeDaemonFileIsNodeLocal(t *testing.T) {
	reset(t)
	shared := filepath.Join(lab.Dir, "state", "shared-maps")
	must(t, os.MkdirAll(shared, 0o755))
	must(t, os.Chown(shared, 65534, 65534))
	dir := lab.NodeFileDir("node16")
	defer func() { must(t, lab.RewriteNodeFiles("node16")) }()
	out, err := gangtopo(t, "daemon", "--role", "node", "--once", "--node-name", "node16",
		"--node-file-dir", dir, "--node-map-dir", shared, "--topology", clusterFile)
	if err != nil {
		t.Fatalf("node daemon: %v\n%s", err, out)
	}
	if !strings.Contains(out, "node map not written (the node file was)") {
		t.Errorf("node daemon log:\n%s\nwant the map's failure as a warning", out)
	}
	// this host has no GPUs or RDMA NICs: the daemon's file has the
	// node's domains and no NIC lines, unlike the lab's
	data, err := os.ReadFile(filepath.Join(dir, "node16"))
	if err != nil || !strings.Contains(string(data), "domain leaf leaf4") || strings.Contains(string(data), "\nnic ") {
		t.Fatalf("node16's file: %v\n%s", err, data)
	}
	// every node has its own file only: node15's directory is untouched
	if entries, err := os.ReadDir(lab.NodeFileDir("node15")); err != nil || len(entries) != 1 || entries[0].Name() != "node15" {
		t.Errorf("node15's directory: %v, %v; want only node15's file", entries, err)
	}
	res := filepath.Join(lab.Dir, "state", "node16-env")
	id, err := lab.Submit(ctxT(t), nil, "-o", res, "-w", "node16", "--gpus=2", "--cpus-per-gpu=1",
		"--wrap", `env | grep -E "^(GANGTOPO_LEAF|NCCL_IB_HCA)=" | sort`)
	must(t, err)
	waitGone(t, id, 30*time.Second)
	got, err := os.ReadFile(res)
	must(t, err)
	if strings.TrimSpace(string(got)) != "GANGTOPO_LEAF=leaf4" {
		t.Errorf("the step on node16 saw\n%s\nwant GANGTOPO_LEAF=leaf4 and no NCCL_IB_HCA (node16's own file, written by the daemon)", got)
	}
}
