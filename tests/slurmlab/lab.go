package slurmlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Binaries of Debian's slurm-wlm packages. The daemons run through symlinks
// named exactly slurmctld/slurmd/slurmstepd: libslurm parses GRES only when
// the process's basename is one of those (SLURM-LAB.md, "Daemon names").
const (
	sbinCtld  = "/usr/sbin/slurmctld-wlm"
	sbinD     = "/usr/sbin/slurmd-wlm"
	sbinStepd = "/usr/sbin/slurmstepd-wlm"
	// StockPluginDir is where Debian installs Slurm's own plugins.
	StockPluginDir = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
	// EnvMarker names the variable every lab process carries.
	EnvMarker = "GANGTOPO_LAB"
)

// Plugins says which gangtopo plugins a lab loads. The zero value is stock
// Slurm: no job_submit plugin and an empty plugstack.conf.
type Plugins struct {
	// Dir holds job_submit_gangtopo.so and spank_gangtopo.so (make plugins
	// writes them to build/plugins). It is appended to PluginDir.
	Dir string
	// JobSubmit loads job_submit/gangtopo (JobSubmitPlugins=gangtopo).
	JobSubmit bool
	// Spank adds spank_gangtopo.so to plugstack.conf, with SpankArgs.
	Spank     bool
	SpankArgs []string
	// CtldEnv is added to slurmctld's environment (GANGTOPO_CONFIG=...).
	CtldEnv []string
}

// Options configure a lab.
type Options struct {
	// Dir is the lab directory; empty means a new temporary one, removed by
	// Stop. A given Dir is kept (make demo keeps its logs) unless RemoveDir.
	Dir       string
	RemoveDir bool
	// Cluster is the topology to emulate; ClusterFile its path (copied to
	// etc/cluster.yaml for the plugins).
	Cluster     *topology.Cluster
	ClusterFile string
	// CtldPort and the slurmd ports CtldPort+1+i; 0 picks free ones.
	CtldPort int
	Plugins  Plugins
	// Partitions are PartitionName= lines added after the lab's default
	// partition (gpu, every node, Default=YES), e.g.
	// "PartitionName=cpu Nodes=node[13-16] State=UP".
	Partitions []string
	// Accounting runs a real slurmdbd over a real MariaDB with the lab
	// (dbd.go) and makes slurmctld use it, with limits and QOS enforced:
	// MariaDB from the host's packages, slurmdbd from the lab's Slurm (in
	// a rooted lab the root's own: a copy of a make roots root with
	// slurmdbd installed; checkDBRoot).
	Accounting bool
	// Topology is the lab's TopologyPlugin and the topology.conf it reads:
	// the zero value is topology/tree with a switch per leaf, block and
	// spine (topologyConf).
	Topology Topology
	// Extra are slurm.conf lines added before the nodes, e.g.
	// "PreemptType=preempt/partition_prio" or "PreemptType=preempt/qos".
	Extra []string
	// Owner marks a lab started by a process that will stop it: a later
	// Start removes labs whose owner died (a test binary killed by its
	// timeout). 0 marks a lab meant to outlive its starter (make demo).
	Owner int
	// Root is a Debian root holding a newer Slurm series (make roots: build/
	// roots/trixie, build/roots/sid) whose daemons and clients the lab runs,
	// chrooted (root.go); empty runs the host's own Slurm packages.
	Root string
	// Expose lists host paths a rooted lab's processes must see at the same
	// path (the plugin builds; the temporary directory always is).
	Expose []string
	// StartBatch starts the slurmds this many at a time, each batch
	// registered before the next starts (0: all at once); MaxJobCount and
	// MaxArraySize are slurm.conf's (0: Slurm's defaults, 10,000 jobs and
	// 1,001 tasks). A lab of hundreds of nodes needs them (scale.go).
	StartBatch                int
	MaxJobCount, MaxArraySize int
	// MinJobAge is how long slurmctld keeps a finished job's record
	// (0: 300 s, what every lab had): a lab that cancels thousands of
	// jobs between measurements shortens it, so that they stop counting.
	MinJobAge time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Topology names a topology plugin and its configuration.
type Topology struct {
	// Plugin is "tree" (the default) or "block" (Slurm 23.11 and later),
	// written as TopologyPlugin=topology/<Plugin>.
	Plugin string
	// Conf is topology.conf as written (e.g. by `gangtopo gen topology
	// --plugin block`); nil writes the lab's own tree (topologyConf).
	Conf []byte
	// YAML, when set, is written as topology.yaml (Slurm 25.05+), which
	// Slurm reads instead of topology.conf.
	YAML []byte
}

// check refuses a plugin the lab's release does not have.
func (t Topology) check(rel Release) error {
	switch t.Plugin {
	case "", "tree":
		return nil
	case "block":
		if !rel.AtLeast(23, 11) {
			return fmt.Errorf("slurmlab: topology/block needs Slurm 23.11 or later; this lab runs %s (use a Debian root: Options.Root)", rel)
		}
		return nil
	}
	return fmt.Errorf("slurmlab: unknown topology plugin %q (want tree or block)", t.Plugin)
}

// Lab is a running cluster.
type Lab struct {
	Dir     string
	Conf    string // etc/slurm.conf
	Cluster *topology.Cluster
	Port    int // slurmctld's port
	CtldPID int
	// Release is the Slurm release the lab runs.
	Release Release

	opts    Options
	tempDir bool
	procs   []proc
	ended   sync.Map // PID -> how a process spawn started ended ("signal: killed")
	nsPID   int      // a rooted lab's namespace holder (root.go)
	acct    accounting
	// pluginCopies maps a plugin directory to its copy in the lab
	// directory (readable.go); closed says why other users cannot reach
	// the lab directory, "" when they can.
	pluginCopies map[string]string
	closed       string
	// releasePorts gives back the ports the lab claimed (nil when it was
	// given its port).
	releasePorts func()
}

// proc is one daemon the lab started.
type proc struct {
	Name string
	PID  int
}

// Start brings a lab up and waits until all its nodes are idle. On error,
// whatever was started is stopped again.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if opts.Cluster == nil {
		return nil, errors.New("slurmlab: no cluster topology given")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("slurmlab: must run as root (it makes device files and starts Slurm daemons)")
	}
	if opts.Root == "" {
		if err := EnsurePackages(ctx, opts.Logf); err != nil {
			return nil, err
		}
	} else if abs, err := filepath.Abs(opts.Root); err != nil {
		return nil, fmt.Errorf("slurmlab: %w", err)
	} else {
		opts.Root = abs
	}
	rel, err := daemonRelease(ctx, opts.Root)
	if err != nil {
		return nil, err
	}
	if err := opts.Topology.check(rel); err != nil {
		return nil, err
	}
	switch {
	case opts.Accounting && opts.Root != "":
		// the roots of make roots carry no slurmdbd: a copy with it does;
		// MariaDB comes from the host
		if err := checkDBRoot(opts.Root); err != nil {
			return nil, err
		}
		fallthrough
	case opts.Accounting:
		if err := EnsureDBPackages(ctx, opts.Logf); err != nil {
			return nil, err
		}
	}
	if err := raiseLimits(len(opts.Cluster.Nodes)); err != nil {
		return nil, fmt.Errorf("slurmlab: %w", err)
	}
	CleanupStale(os.TempDir(), opts.Logf)
	l := &Lab{Cluster: opts.Cluster, opts: opts, Release: rel}
	if err := l.checkExposed(opts.Plugins.Dir); err != nil {
		return nil, fmt.Errorf("slurmlab: plugins: %w", err)
	}
	if err := l.makeDir(); err != nil {
		return nil, err
	}
	if err := l.start(ctx); err != nil {
		l.tempDir = false // keep the logs for the error message's reader
		l.Stop()
		return nil, fmt.Errorf("slurmlab: %w (logs in %s/log)", err, l.Dir)
	}
	return l, nil
}

func (l *Lab) makeDir() error {
	dir := l.opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "gangtopo-lab-")
		if err != nil {
			return fmt.Errorf("slurmlab: %w", err)
		}
		dir, l.tempDir = d, true
	}
	l.tempDir = l.tempDir || l.opts.RemoveDir
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("slurmlab: %w", err)
	}
	l.Dir = dir
	l.Conf = filepath.Join(dir, "etc", "slurm.conf")
	// munged wants every directory on the way to its socket executable by
	// all, and its key directory private.
	for _, sub := range []string{"", "etc", "bin", "dev", "log", "run", "munge", "spool", "spool/ctld", "spool/d", "state", "db"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("slurmlab: %w", err)
		}
		if err := os.Chmod(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("slurmlab: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "munge", "key"), 0o700); err != nil {
		return fmt.Errorf("slurmlab: %w", err)
	}
	if d := unreachable(dir); d != "" {
		l.closed = fmt.Sprintf("the lab directory %s is out of other users' reach: %s; Slurm commands run as another user "+
			"(Lab.RunAs) fail: put the lab where every user may enter (TMPDIR=/tmp)", dir, d)
		l.opts.Logf("slurmlab: note: %s", l.closed)
	}
	return nil
}

// start is Start's body: every step may fail, and Start cleans up.
func (l *Lab) start(ctx context.Context) error {
	// slurmctld, one slurmd per node, and with accounting the database
	// and slurmdbd, all from one range so that none collides
	n := len(l.Cluster.Nodes) + 1
	if l.opts.Accounting {
		n += 2
	}
	port := l.opts.CtldPort
	if port == 0 {
		p, release, err := claimPorts(n)
		if err != nil {
			return err
		}
		port, l.releasePorts = p, release
	}
	l.Port = port
	l.acct.dbPort, l.acct.dbdPort = port+n-2, port+n-1
	if err := os.WriteFile(filepath.Join(l.Dir, "run", "owner"), []byte(strconv.Itoa(l.opts.Owner)+"\n"), 0o644); err != nil {
		return err
	}
	if err := l.makeDevices(); err != nil {
		return err
	}
	// the node files the SPANK plugin's remote context reads
	// (nodefile_dir= in plugstack.conf), in each node's own directory
	if err := writeNodeFiles(l.Cluster, l.NodeFileDir); err != nil {
		return err
	}
	if err := os.MkdirAll(l.Path("nodes"), 0o755); err != nil {
		return err
	}
	if err := l.writeConfig(); err != nil {
		return err
	}
	t0 := time.Now()
	if l.opts.Root != "" {
		if err := l.startRoot(ctx); err != nil {
			return err
		}
	}
	if err := l.startMunge(ctx); err != nil {
		return err
	}
	if l.opts.Accounting {
		if err := l.startAccounting(ctx); err != nil {
			return err
		}
	}
	if err := l.startCtld(ctx); err != nil {
		return err
	}
	if err := l.startNodes(ctx); err != nil {
		return err
	}
	l.opts.Logf("slurmlab: Slurm %s: %d nodes idle after %v (dir %s, port %d)", l.Release, len(l.Cluster.Nodes), time.Since(t0).Round(time.Millisecond), l.Dir, l.Port)
	return nil
}

// makeDevices creates the fake GPU character devices gres.conf points at:
// slurmd drops GPUs without a device file (SLURM-LAB.md).
func (l *Lab) makeDevices() error {
	most := 0
	for i := range l.Cluster.Nodes {
		most = max(most, l.Cluster.Nodes[i].NumGPUs())
	}
	for i := 0; i < most; i++ {
		if err := mknodChar(filepath.Join(l.Dir, "dev", fmt.Sprintf("nvidia%d", i)), 195, i); err != nil {
			return err
		}
	}
	for _, name := range []string{"slurmctld", "slurmd", "slurmstepd"} {
		link := filepath.Join(l.Dir, "bin", name)
		target := map[string]string{"slurmctld": sbinCtld, "slurmd": sbinD, "slurmstepd": sbinStepd}[name]
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}

// Env is the environment for Slurm client commands talking to this lab. A
// rooted lab's client scripts come first on PATH (root.go).
func (l *Lab) Env() []string {
	env := []string{"SLURM_CONF=" + l.Conf, EnvMarker + "=" + l.Dir}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLURM_") || strings.HasPrefix(kv, "SBATCH_") || strings.HasPrefix(kv, "SALLOC_") ||
			strings.HasPrefix(kv, "SRUN_") || strings.HasPrefix(kv, "GANGTOPO_") || strings.HasPrefix(kv, EnvMarker+"=") {
			continue // never leak an outer job's or lab's settings in
		}
		if path, ok := strings.CutPrefix(kv, "PATH="); ok && l.opts.Root != "" {
			kv = "PATH=" + l.clientDir() + ":" + path
		}
		env = append(env, kv)
	}
	return env
}

// daemonEnv is a daemon's environment: a rooted lab's daemons get the
// root's standard PATH, not the client scripts (which work only outside).
func (l *Lab) daemonEnv(extra []string) []string {
	env := append(l.Env(), extra...)
	if l.opts.Root != "" {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return env
}

// NodeFileDir is the node-local directory a node's slurmd, and the
// slurmstepd it starts, see as <lab>/nodes (the SPANK plugin's
// nodefile_dir): each slurmd runs in a mount namespace of its own with this
// directory bound there, as every node of a real cluster has its own /var.
// Each node's directory holds that node's file only (writeNodeFile), as
// the node daemon would write it.
func (l *Lab) NodeFileDir(node string) string { return l.Path("local", node, "nodes") }

// Path joins elements to the lab directory.
func (l *Lab) Path(elem ...string) string {
	return filepath.Join(append([]string{l.Dir}, elem...)...)
}
