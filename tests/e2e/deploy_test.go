package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/docs"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

func init() {
	register("DeployingOnACluster", testDeployingOnACluster)
}

// deployStep is one command of docs/admin.md's "Deploying on a cluster", as
// written there, and how the lab runs it.
type deployStep struct {
	cmd   string
	repo  bool                           // run in the repository (make), else in the scratch directory
	extra string                         // appended when run (make: where to build and install)
	check func(t *testing.T, out string) // what the output must say
	// before runs first: the lab's part of a step the text describes
	// (editing slurm.conf).
	before func(t *testing.T)
}

// testDeployingOnACluster runs every command of docs/admin.md's "Deploying
// on a cluster", in the order written, against the lab: documented paths
// (/etc/gangtopo, /var/lib/gangtopo) move into a scratch directory,
// /etc/slurm/topology.conf is the lab's, and make builds and installs into
// the scratch directory, away from the objects the lab's slurmctld has
// loaded. The section must hold exactly these commands, so a command added
// to it is a command this test runs.
func testDeployingOnACluster(t *testing.T) {
	reset(t)
	scratch := t.TempDir()
	must(t, os.Chmod(scratch, 0o755))
	var jobID string
	stock := slurmlab.Plugins{Dir: os.Getenv("GANGTOPO_PLUGINS"), Spank: true}
	// on a Debian root the administrator's machine is the root: its headers
	build := " BUILD=" + scratch + "/build"
	if root := slurmRoot(); root != "" {
		build += " SLURM_INCLUDE=" + root + "/usr/include SLURM_ROOT=" + root
	}
	steps := []deployStep{
		{cmd: "make build plugins", repo: true, extra: build},
		{cmd: "make install PREFIX=/usr/local SLURM_PLUGIN_DIR=/usr/lib/x86_64-linux-gnu/slurm-wlm", repo: true,
			extra: build + " DESTDIR=" + scratch + "/root",
			check: func(t *testing.T, _ string) {
				for _, f := range []string{"usr/lib/x86_64-linux-gnu/slurm-wlm/job_submit_gangtopo.so", "usr/lib/x86_64-linux-gnu/slurm-wlm/libgangtopo.so",
					"usr/lib/x86_64-linux-gnu/slurm-wlm/spank_gangtopo.so", "usr/local/bin/gangtopo"} {
					if _, err := os.Stat(filepath.Join(scratch, "root", f)); err != nil {
						t.Error(err)
					}
				}
			}},
		{cmd: "gangtopo discover --node-name node01 > node01.json"},
		{cmd: "gangtopo topology build --node-maps . --topology-conf /etc/slurm/topology.conf --name lab16 --partition gpu -o cluster.yaml"},
		{cmd: "install -D -m 0644 cluster.yaml /etc/gangtopo/cluster.yaml"},
		{cmd: "gangtopo topology hash /etc/gangtopo/cluster.yaml", check: contains(" lab16 ")},
		{cmd: "gangtopo gen gres --topology /etc/gangtopo/cluster.yaml", check: contains("AutoDetect=off")},
		{cmd: "gangtopo gen features --topology /etc/gangtopo/cluster.yaml", check: contains("gt_leaf1")},
		{cmd: "gangtopo gen topology --topology /etc/gangtopo/cluster.yaml", check: contains("SwitchName=leaf1 Nodes=node01")},
		{cmd: "gangtopo daemon --role node --once --node-name node01 --node-file-dir /var/lib/gangtopo/nodes --topology /etc/gangtopo/cluster.yaml",
			check: func(t *testing.T, _ string) {
				data, err := os.ReadFile(filepath.Join(scratch, "var/lib/gangtopo/nodes/node01"))
				if err != nil || !strings.Contains(string(data), "domain leaf leaf1") {
					t.Errorf("node file: %v\n%s", err, data)
				}
			}},
		{cmd: "install -d -m 0755 /var/lib/gangtopo"},
		{cmd: "gangtopo daemon --role controller --once --topology /etc/gangtopo/cluster.yaml -o /var/lib/gangtopo/snapshot.json",
			check: func(t *testing.T, _ string) {
				if _, err := os.Stat(filepath.Join(scratch, "var/lib/gangtopo/snapshot.json")); err != nil {
					t.Error(err)
				}
			}},
		// from 24.05 slurmctld re-executes itself on reconfigure, and the
		// nodes are unavailable until their slurmd registers again: the
		// job below would pend (ReqNodeNotAvail) without this wait. The
		// plugin reads the lab's snapshot, which the controller daemon of
		// a real site keeps fresh: the steps above (a build) can outlast
		// its max_snapshot_age (30 s) on a loaded machine, and a stale
		// snapshot leaves the job untouched (CI at 8e1f7d4, 22.05 and
		// 24.11): the lab publishes one here, as the daemon would
		{cmd: "scontrol reconfigure", check: func(t *testing.T, _ string) {
			must(t, lab.WaitNodesIdle(ctxT(t), time.Minute))
			publish(t)
		}},
		{cmd: "sbatch --gpus=16 --gang-topology=leaf --wrap 'sleep 60'", extra: " -o /dev/null",
			check: func(t *testing.T, out string) {
				m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no job ID in %q", out)
				}
				jobID = m[1]
				// the documented check reads a placed job; the
				// unbind step further on wants it started (24.11.5
				// took seconds to look at it)
				if j, err := lab.WaitSettled(ctxT(t), jobID, 2*time.Second, time.Minute); err != nil || j.State != "RUNNING" {
					t.Fatalf("job %s: %v %+v, want RUNNING", jobID, err, j)
				}
			}},
		{cmd: "gangtopo why JOBID", check: contains("gangtopo: placed in leaf")},
		// the off switch: gangtopo out of JobSubmitPlugins, then reconfigure
		{cmd: "scontrol reconfigure", before: func(t *testing.T) { must(t, lab.SetPlugins(stock)) },
			check: func(t *testing.T, _ string) {
				j := settle(t, submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"))
				if j.AdminComment != "" || j.Features != "" {
					t.Errorf("after the off switch job %s was placed: %q %q", j.ID, j.AdminComment, j.Features)
				}
			}},
		{cmd: "gangtopo unbind", check: contains("gangtopo: no pending job carries a gangtopo binding")},
		{cmd: "gangtopo unbind --clear"},
	}
	defer func() {
		if err := lab.Reconfigure(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))); err != nil {
			t.Fatal(err)
		}
		publish(t)
	}()
	var want []string
	for _, s := range steps {
		want = append(want, s.cmd)
	}
	if diff := cmp.Diff(want, documentedCommands(t, "../../docs/admin.md", "## Deploying on a cluster")); diff != "" {
		t.Fatalf("docs/admin.md's commands and this test's differ (-test +doc):\n%s", diff)
	}
	var registered []string
	for _, e := range docs.For("DeployingOnACluster") {
		registered = append(registered, e.Cmd)
	}
	if diff := cmp.Diff(want, registered); diff != "" {
		t.Fatalf("tests/docs.Registry's lines for this test and its steps differ (-test +registry):\n%s", diff)
	}
	paths := strings.NewReplacer("/etc/gangtopo/", scratch+"/etc/gangtopo/", "/var/lib/gangtopo", scratch+"/var/lib/gangtopo",
		"/etc/slurm/topology.conf", lab.Path("etc", "topology.conf"))
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		line := s.cmd
		if !s.repo {
			line = paths.Replace(strings.ReplaceAll(line, "JOBID", jobID))
		}
		out := runShell(t, line+s.extra, s.repo, scratch)
		if s.check != nil {
			s.check(t, out)
		}
		if t.Failed() {
			t.Fatalf("after %q:\n%s", s.cmd, out)
		}
	}
}

func contains(want string) func(*testing.T, string) {
	return func(t *testing.T, out string) {
		t.Helper()
		if !strings.Contains(out, want) {
			t.Errorf("output:\n%s\nwant %q", out, want)
		}
	}
}

// runShell runs one documented command line with sh, as an administrator
// would type it: gangtopo on PATH, the lab's Slurm.
func runShell(t *testing.T, line string, repo bool, scratch string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Dir = scratch
	if repo {
		cmd.Dir = "../.."
	}
	// gangtopo first, then the lab's PATH (on a Debian root its Slurm
	// clients come first there: the host's 22.05 clients cannot talk to a
	// 26.05 slurmctld, and sinfo says only "Unspecified error")
	bin := filepath.Dir(os.Getenv("GANGTOPO_BIN"))
	path := os.Getenv("PATH")
	for _, kv := range lab.Env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	cmd.Env = append(lab.Env(), "PATH="+bin+":"+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// documentedCommands returns the command lines of the ```sh blocks in the
// section of a Markdown file that starts with heading (docsection.Commands).
func documentedCommands(t *testing.T, path, heading string) []string {
	t.Helper()
	out, err := docsection.Commands(path, heading)
	must(t, err)
	return out
}
