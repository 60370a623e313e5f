package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// TestGoldenDiscovery runs the discovery, topology and generator commands
// and compares stdout, stderr and the exit code with testdata/golden. The
// GPU library is the null one and the clock fixed, so the output does not
// depend on the machine the tests run on.
func TestGoldenDiscovery(t *testing.T) {
	defer stubWorld(t)()
	lab := filepath.Join("..", "..", "docs", "examples", "lab16.yaml")
	nvl := filepath.Join("..", "..", "docs", "examples", "gb200-nvl72.yaml")
	sysfs := filepath.Join("internal", "discovery", "testdata", "sysfs")
	tests := []struct {
		name string
		args []string
	}{
		{"gen-topology-lab16", []string{"gen", "topology", "--topology", lab}},
		{"gen-topology-block-nvl72", []string{"gen", "topology", "--topology", nvl, "--plugin", "block"}},
		{"gen-topology-block-no-blocks", []string{"gen", "topology", "--topology", lab, "--plugin", "block"}},
		{"gen-topology-yaml-gb200-lab", []string{"gen", "topology", "--topology", filepath.Join("..", "..", "docs", "examples", "gb200-lab.yaml"), "--plugin", "block", "--format", "topology.yaml"}},
		{"gen-topology-bad-format", []string{"gen", "topology", "--topology", lab, "--format", "topology.yml"}},
		{"gen-gres-lab16", []string{"gen", "gres", "--topology", lab, "--dev-dir", "@LAB@/dev"}},
		{"gen-features-lab16", []string{"gen", "features", "--topology", lab}},
		{"gen-features-scontrol", []string{"gen", "features", "--topology", nvl, "--format", "scontrol"}},
		{"gen-missing-topology", []string{"gen", "gres"}},
		{"discover-cpu-only", []string{"discover", "--sysfs", filepath.Join(sysfs, "no-nic"), "--node-name", "login1"}},
		{"discover-nodefile-ib-host", []string{"discover", "--sysfs", filepath.Join(sysfs, "ib-host"), "--node-name", "node05", "-o", "nodefile", "--topology", lab}},
		{"discover-nodefile-not-in-cluster", []string{"discover", "--sysfs", filepath.Join(sysfs, "ib-host"), "--node-name", "n1", "-o", "nodefile", "--topology", lab}},
		{"discover-topo-cpu-only", []string{"discover", "--sysfs", filepath.Join(sysfs, "no-nic"), "--node-name", "login1", "-o", "topo"}},
		{"discover-bad-output", []string{"discover", "-o", "yaml"}},
		{"topology-build", []string{"topology", "build", "--node-maps", filepath.Join("testdata", "nodemaps"), "--topology-conf", filepath.Join("testdata", "topology.conf"), "--name", "lab", "--partition", "gpu"}},
		{"topology-build-both-sources", []string{"topology", "build", "--node-maps", "x", "--topology-conf", "a", "--ibnetdiscover", "b"}},
		{"topology-build-bad-model", []string{"topology", "build", "--node-maps", "x", "--topology-conf", "a", "--model", "h100"}},
		{"daemon-controller", []string{"daemon", "--role", "controller"}},
		{"topology-hash", []string{"topology", "hash", lab, nvl}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.args, nil)
		})
	}
}

// stubWorld makes discovery see no GPU library and a fixed clock.
func stubWorld(t *testing.T) func() {
	t.Helper()
	oldLib, oldNow := discoverGPULib, discoverClock
	discoverGPULib = func() discovery.GPULib { return discovery.Null{Reason: "test: no NVML"} }
	discoverClock = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	return func() { discoverGPULib, discoverClock = oldLib, oldNow }
}

// TestDaemonNodeOnce runs `gangtopo daemon --role node --once` and reads
// back what it published.
func TestDaemonNodeOnce(t *testing.T) {
	defer stubWorld(t)()
	dir := t.TempDir()
	sysfs := filepath.Join("internal", "discovery", "testdata", "sysfs", "ib-host")
	args := []string{"daemon", "--role", "node", "--once", "--sysfs", sysfs, "--node-name", "n1",
		"--node-map-dir", filepath.Join(dir, "maps"), "--node-file-dir", filepath.Join(dir, "nodes"),
		"--topology", filepath.Join("..", "..", "docs", "examples", "lab16.yaml")}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	f, err := os.Open(filepath.Join(dir, "maps", "n1.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := discovery.DecodeNodeMap(f, "n1.json")
	if err != nil {
		t.Fatal(err)
	}
	// ib-host has 9 RDMA devices (mlx5_0..7 and the VF mlx5_8); no GPUs
	// without NVML.
	if m.Node != "n1" || len(m.NICs) != 9 || !m.CPUOnly() {
		t.Errorf("published map: node %q, %d NICs, CPU-only %v", m.Node, len(m.NICs), m.CPUOnly())
	}
	// n1 is not in lab16: the node file is written without domain lines,
	// with a warning in the log.
	nf, err := os.ReadFile(filepath.Join(dir, "nodes", "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := nodefile.Parse(nf); err != nil || f.Node != "n1" || len(f.Domains) != 0 || len(f.NICs) != 7 {
		t.Errorf("node file %q: %+v, %v (want node n1, no domains, the 7 usable NICs)", nf, f, err)
	}
	if !strings.Contains(stderr.String(), "node n1 is not in") {
		t.Errorf("want a warning that n1 is not in the cluster file, got %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), `"message":"node map published (changed)"`) {
		t.Errorf("want a JSON log line for the publish, got %q", stderr.String())
	}
}

// TestBuildThenGresOnSMT follows the documented path on nodes with two
// threads per core (testdata/nodemaps: 2 x 56 cores, 224 CPUs, GPUs 0-3 on
// NUMA 0 and 4-7 on NUMA 1): `topology build` keeps threads_per_core in the
// cluster file and `gen gres` then writes Slurm's core ids, 0-55 and
// 56-111, not the logical CPUs' 0-111 and 112-223.
func TestBuildThenGresOnSMT(t *testing.T) {
	defer stubWorld(t)()
	cluster := filepath.Join(t.TempDir(), "cluster.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"topology", "build", "--node-maps", filepath.Join("testdata", "nodemaps"),
		"--topology-conf", filepath.Join("testdata", "topology.conf"), "--name", "lab", "--partition", "gpu", "-o", cluster}, &stdout, &stderr); code != 0 {
		t.Fatalf("topology build: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"gen", "gres", "--topology", cluster}, &stdout, &stderr); code != 0 {
		t.Fatalf("gen gres: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"File=/dev/nvidia0 Links=-1,18,18,18,18,18,18,18 Cores=0-55", "File=/dev/nvidia7 Links=18,18,18,18,18,18,18,-1 Cores=56-111"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("gres.conf:\n%s\nwant a line with %q", stdout.String(), want)
		}
	}
	if strings.Contains(stdout.String(), "112-223") {
		t.Errorf("gres.conf has logical CPU ids as cores:\n%s", stdout.String())
	}
}
