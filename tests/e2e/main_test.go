package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// lab is the cluster shared by every test of the package; tests run one
// after another and each starts from an empty cluster (reset).
var lab *slurmlab.Lab

// Paths inside the lab directory.
var (
	clusterFile  string // etc/cluster.yaml, the topology the plugin loads
	configFile   string // etc/gangtopo.yaml
	snapshotFile string // state/snapshot.json
)

const clusterSource = "../../docs/examples/lab16.yaml"

// labConfig is the e2e gangtopo.yaml: every GPU job in the partitions gpu
// (Slurm's default, which the tests' jobs use without -p) and debug is
// placed, the snapshot is re-read every 50 ms (publish waits 300 ms for it);
// the controller's changes are audited beside the snapshot (auditLog).
const labConfig = `version: v1
topology: %s
snapshot: %s
jobs: gpu
default_topology: any:preferred
on_failure: open
max_snapshot_age: 30s
reload_interval: 50ms
deadline: 200ms
decision_field: admin_comment
partitions: [gpu, debug]
pending_hold: 2s
actions:
  audit_log: %[2]s.audit.log
`

// auditLog is the audit log of a controller publishing snapshot under
// labConfig: every change it makes in Slurm, one JSON line before and one
// after.
func auditLog(snapshot string) string { return snapshot + ".audit.log" }

// labConfigAll is labConfig under jobs: all: the plugins decide about
// every job, CPU-only ones too. Every sequence a test runs on stock Slurm
// for comparison runs with the plugins under it (issue 22: gangtopo must
// take every job stock Slurm runs): DeployedPathBeatsStockSlurm,
// SmallJobsKeepWholeNodesWhole, ResourceOptionsAsStockSlurm, the block
// tests' stock partition.
var labConfigAll = strings.Replace(labConfig, "jobs: gpu", "jobs: all", 1)

// labPendingHold is labConfig's pending_hold, shorter than the default
// (10 s): the tests publish snapshots themselves right after their jobs
// start, and reset waits it out so that no decision of an earlier test
// (a job cancelled before a snapshot showed it) is still counted.
const labPendingHold = 2 * time.Second

// labPartitions are the lab's partitions besides gpu (every node, Slurm's
// default): debug has every node too but is not in the cluster file, which
// lists only gpu; cpu is outside gangtopo.yaml's partitions.
var labPartitions = []string{
	"PartitionName=debug Nodes=node[01-16] MaxTime=INFINITE State=UP",
	"PartitionName=cpu Nodes=node[13-16] MaxTime=INFINITE State=UP",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("GANGTOPO_E2E") != "1" {
		// `go test ./...` (make unit) lands here; `make e2e`, part of
		// `make test`, sets GANGTOPO_E2E and under CI=true never skips.
		fmt.Println("e2e: skipped (run `make e2e`, or set GANGTOPO_E2E=1 with the variables it sets; needs root)")
		return 0
	}
	t0 := time.Now()
	l, err := startLab()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	lab = l
	code := m.Run()
	if release, err := labRelease(); err == nil {
		faults.Print(os.Stdout, release)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: slurmctld log tail:\n%s\n", lab.LogTail("slurmctld.log", 60))
	}
	if err := lab.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	fmt.Printf("e2e: wall time %v\n", time.Since(t0).Round(time.Millisecond))
	return code
}

func startLab() (*slurmlab.Lab, error) {
	plugins := os.Getenv("GANGTOPO_PLUGINS")
	if plugins == "" {
		return nil, fmt.Errorf("GANGTOPO_PLUGINS is not set: run `make e2e`")
	}
	c, data, err := readCluster(clusterSource)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gangtopo-lab-")
	if err != nil {
		return nil, err
	}
	clusterFile = filepath.Join(dir, "etc", "cluster.yaml")
	configFile = filepath.Join(dir, "etc", "gangtopo.yaml")
	snapshotFile = filepath.Join(dir, "state", "snapshot.json")
	for _, sub := range []string{"etc", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(clusterFile, data, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(configFile, []byte(fmt.Sprintf(labConfig, clusterFile, snapshotFile)), 0o644); err != nil {
		return nil, err
	}
	return slurmlab.Start(context.Background(), slurmlab.Options{
		Dir: dir, RemoveDir: true, Cluster: c, ClusterFile: clusterFile, Owner: os.Getpid(),
		Plugins: gangtopoPlugins(plugins), Partitions: labPartitions,
		Root: slurmRoot(), Expose: pluginDirs(),
		Logf: func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
	})
}

// pluginDirs are the plugin builds the tests load, which a lab on a Debian
// root must see inside it.
func pluginDirs() []string {
	var out []string
	for _, v := range []string{"GANGTOPO_PLUGINS", "GANGTOPO_FAULT_PLUGINS"} {
		if d := os.Getenv(v); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// slurmRoot is the Debian root of the series under test, "" for the
// host's own Slurm (make e2e sets GANGTOPO_SLURM_ROOT).
func slurmRoot() string { return os.Getenv("GANGTOPO_SLURM_ROOT") }

// gangtopoPlugins loads both plugins from dir.
func gangtopoPlugins(dir string) slurmlab.Plugins {
	return slurmlab.Plugins{Dir: dir, JobSubmit: true, Spank: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + configFile}}
}

func readCluster(path string) (*topology.Cluster, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	c, err := topology.Parse(f, path)
	return c, data, err
}
