// Package quota is the end-to-end test of gangtopo's dynamic quotas on the
// real lab with accounting: slurmctld and 16 slurmd with a real slurmdbd
// over a private MariaDB (slurmlab Options.Accounting), PreemptType=
// preempt/qos, PreemptMode=REQUEUE, gangtopo's job_submit plugin (jobs:
// gpu, so an owner's job is gangtopo-bound when its reclaim is planned),
// and the gangtopo binary as built (`gangtopo quota sync --yes`, `gangtopo
// daemon --role controller --once`, `gangtopo quota off`). The fault tests
// record their outcomes in the faults table (tests/e2e/faults), printed at
// the end.
// The same lab, for its slurmdbd, runs the queue model's timing check
// (history_test.go).
package quota

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

var (
	lab                            *slurmlab.Lab
	clusterFile, configFile, snapF string
	// beforeSync is Slurm's accounting (dumpAccounting) before any
	// gangtopo quota sync: what quota off must put back.
	beforeSync string
)

// nobody is the user who tries what only the controller may do: a member
// of teama (root is Slurm's operator, and may).
const nobody = 65534

const quotaConfig = `version: v1
topology: %s
snapshot: %s
jobs: gpu
default_topology: leaf:required
quota:
  enabled: true
  shares:
    - {account: teama, gpus: 64}
    - {account: teamb, gpus: 64}
  raise_interval: 0s
  job_interval: 0s
actions:
  audit_log: %[2]s.audit.log
`

func TestMain(m *testing.M) {
	if os.Getenv("GANGTOPO_E2E") != "1" {
		fmt.Println("e2e quota: skipped (run `make e2e`, or set GANGTOPO_E2E=1 with the variables it sets; needs root)")
		return
	}
	code := func() int {
		t0 := time.Now()
		if err := slurmlab.EnsureDBPackages(context.Background(), func(f string, a ...any) { fmt.Printf(f+"\n", a...) }); err != nil {
			fmt.Fprintln(os.Stderr, "e2e quota:", err)
			return 1
		}
		dir, err := os.MkdirTemp("", "gangtopo-quota-lab-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		clusterFile = filepath.Join(dir, "etc", "cluster.yaml")
		configFile = filepath.Join(dir, "etc", "gangtopo.yaml")
		snapF = filepath.Join(dir, "state", "snapshot.json")
		for _, sub := range []string{"etc", "state"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		data, err := os.ReadFile("../../../docs/examples/lab16.yaml")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c, err := topology.Parse(strings.NewReader(string(data)), "lab16.yaml")
		if err == nil {
			err = os.WriteFile(clusterFile, data, 0o644)
		}
		if err == nil {
			err = os.WriteFile(configFile, []byte(fmt.Sprintf(quotaConfig, clusterFile, snapF)), 0o644)
		}
		plugins := os.Getenv("GANGTOPO_PLUGINS")
		if err == nil && plugins == "" {
			err = fmt.Errorf("GANGTOPO_PLUGINS is not set: run `make e2e`")
		}
		if err == nil {
			lab, err = slurmlab.Start(context.Background(), slurmlab.Options{Dir: dir, RemoveDir: true, Cluster: c,
				ClusterFile: clusterFile, Owner: os.Getpid(), Accounting: true,
				Plugins: slurmlab.Plugins{Dir: plugins, JobSubmit: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + configFile}},
				Extra:   []string{"PreemptType=preempt/qos", "PreemptMode=REQUEUE", "JobRequeue=1"},
				Logf:    func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
		}
		if err == nil {
			beforeSync, err = addAccounts()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e quota:", err)
			if lab != nil {
				lab.Stop()
			}
			return 1
		}
		code := m.Run()
		out, _ := lab.Run(context.Background(), slurmlab.DefaultTimeout, "scontrol", "--version")
		if f := strings.Fields(out); len(f) > 0 { // "slurm-wlm 22.05.8"
			faults.Print(os.Stdout, f[len(f)-1])
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "slurmctld log tail:\n%s\n", lab.LogTail("slurmctld.log", 60))
		}
		if err := lab.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e quota:", err)
			code = 1
		}
		fmt.Printf("e2e quota: wall time %v\n", time.Since(t0).Round(time.Millisecond))
		return code
	}()
	os.Exit(code)
}

// addAccounts makes the lab's accounts (teama with root and nobody, teamb
// with root) and returns Slurm's accounting as it is then.
func addAccounts() (string, error) {
	ctx := context.Background()
	for _, args := range [][]string{{"add", "account", "teama"}, {"add", "account", "teamb"}, {"add", "user", "root", "account=teama"},
		{"add", "user", "root", "account=teamb"}, {"add", "user", "nobody", "account=teama"}} {
		if out, err := lab.Sacctmgr(ctx, args...); err != nil {
			return "", fmt.Errorf("sacctmgr %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dumpAccounting(ctx)
}

// dumpAccounting is what sacctmgr shows of the QOS and the associations,
// every field gangtopo reads or writes.
func dumpAccounting(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, args := range [][]string{{"-nP", "show", "qos", "format=name,grptres,preempt,preemptmode,description"},
		{"-nP", "show", "association", "format=account,user,partition,qos,defaultqos"}} {
		out, err := lab.Run(ctx, slurmlab.DefaultTimeout, "sacctmgr", args...)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	return b.String(), nil
}

func dump(t *testing.T) string {
	t.Helper()
	out, err := dumpAccounting(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// syncQuota runs gangtopo quota sync --yes: each test starts from Slurm
// as sync makes it, whichever ran before (the quota off test removes
// gangtopo's QOS).
func syncQuota(t *testing.T) string {
	t.Helper()
	out := gangtopo(t, "quota", "sync", "--yes", "--config", configFile)
	t.Logf("quota sync:\n%s", out)
	return out
}

func gangtopo(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("GANGTOPO_BIN")
	if bin == "" {
		t.Fatal("GANGTOPO_BIN is not set: run `make e2e`")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = lab.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gangtopo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func sacctmgr(t *testing.T, args ...string) {
	t.Helper()
	if out, err := lab.Sacctmgr(context.Background(), args...); err != nil {
		t.Fatalf("sacctmgr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func submit(t *testing.T, account, qos string, nodes int) string {
	t.Helper()
	id, err := lab.Submit(context.Background(), nil, "-o", "/dev/null", "-A", account, "--qos", qos, "-N", fmt.Sprint(nodes),
		"--gpus-per-node", "8", "--exclusive", "--wrap", "sleep 100000")
	if err != nil {
		t.Fatalf("sbatch -A %s --qos %s: %v", account, qos, err)
	}
	return id
}

func job(t *testing.T, id string) *slurmlab.Job {
	t.Helper()
	j, err := lab.ShowJob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// waitFor polls until ok holds for the job, or fails after limit.
func waitFor(t *testing.T, id string, limit time.Duration, what string, ok func(*slurmlab.Job) bool) *slurmlab.Job {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := job(t, id)
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: not %s after %v: state %s reason %s QOS %s", id, what, limit, j.State, j.Reason, j.Fields["QOS"])
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func cycle(t *testing.T) string {
	t.Helper()
	return gangtopo(t, "daemon", "--role", "controller", "--once", "--topology", clusterFile, "-o", snapF, "--config", configFile)
}

// TestLendAndReclaim: teama is quiet; teamb runs 8 whole nodes in its own
// QOS (its share, 64 GPUs) and submits 8 more, which its QOS keeps
// pending; the controller moves them to the borrow QOS, where they run on
// teama's idle share. Then teama submits a 2-node (16-GPU) job: the
// controller pins it to two nodes of one leaf whose borrowed jobs Slurm
// requeues; it starts there; teamb's own 8 jobs are untouched; the
// requeued jobs wait and run again once teama's job ends.
func TestLendAndReclaim(t *testing.T) {
	t.Logf("Slurm's accounting before sync:\n%s", beforeSync)
	clean(t)
	out := syncQuota(t)
	after := dump(t)
	t.Logf("Slurm's accounting after sync:\n%s", after)
	// authority: no association may use the borrow or the reclaim QOS
	for _, line := range strings.Split(after, "\n") {
		if f := strings.Split(line, "|"); len(f) == 5 && (strings.Contains(f[3], "gt-borrow") || strings.Contains(f[3], "gt-reclaim")) {
			t.Errorf("after sync the association %q may use gangtopo's borrow or reclaim QOS", line)
		}
	}
	var own, extra []string
	for range 8 {
		own = append(own, submit(t, "teamb", "gt-teamb", 1))
	}
	for _, id := range own {
		waitFor(t, id, 60*time.Second, "running", func(j *slurmlab.Job) bool { return j.State == "RUNNING" })
	}
	for range 8 {
		extra = append(extra, submit(t, "teamb", "gt-teamb", 1))
	}
	time.Sleep(3 * time.Second)
	if j := job(t, extra[0]); j.State != "PENDING" {
		t.Fatalf("teamb's 9th node runs (%s) before any borrowing: its QOS limit does not hold", j.State)
	}
	out = cycle(t)
	if !strings.Contains(out, "quota: waiting job moved") {
		t.Fatalf("first cycle moved nothing:\n%s", out)
	}
	out = cycle(t) // the borrow QOS limit may follow the moves
	for _, id := range extra {
		waitFor(t, id, 60*time.Second, "running in gt-borrow", func(j *slurmlab.Job) bool {
			return j.State == "RUNNING" && j.Fields["QOS"] == "gt-borrow"
		})
	}
	t.Logf("teamb borrows 64 GPUs; teama submits")
	cycle(t) // a fresh snapshot: the plugin binds teama's job to a leaf
	owner := submit(t, "teama", "gt-teama", 2)
	time.Sleep(2 * time.Second)
	bound := job(t, owner).AdminComment
	out = cycle(t)
	if !strings.Contains(out, "quota: entitled job pinned to reclaim borrowed GPUs") {
		t.Fatalf("no reclaim for teama's job (%s):\n%s", bound, out)
	}
	t.Logf("teama's job %s, gangtopo's decision %q, pinned: %s", owner, bound, job(t, owner).AdminComment)
	o := waitFor(t, owner, 90*time.Second, "running", func(j *slurmlab.Job) bool { return j.State == "RUNNING" })
	// lab16: leaf3 node09-12, leaf4 node13-16 (the borrowed jobs' nodes);
	// node01-08 hold teamb's own jobs
	leaf := func(n string) string {
		switch {
		case n >= "node13":
			return "leaf4"
		case n >= "node09":
			return "leaf3"
		}
		return "teamb's own node " + n
	}
	if len(o.Nodes) != 2 || leaf(o.Nodes[0]) != leaf(o.Nodes[1]) || strings.HasPrefix(leaf(o.Nodes[0]), "teamb") {
		t.Errorf("teama's job runs on %v: want two nodes of one leaf among the borrowed jobs' node09-16", o.Nodes)
	}
	for _, id := range own {
		if j := job(t, id); j.State != "RUNNING" || j.Fields["Restarts"] != "0" {
			t.Errorf("teamb's own job %s: %s, restarts %s: a non-borrowing job was touched", id, j.State, j.Fields["Restarts"])
		}
	}
	requeued := 0
	for _, id := range extra {
		if j := job(t, id); j.Fields["Restarts"] != "0" {
			requeued++
		}
	}
	if requeued != 2 {
		t.Errorf("%d borrowed jobs requeued, want the 2 on teama's nodes", requeued)
	}
	if _, err := lab.Run(context.Background(), slurmlab.DefaultTimeout, "scancel", owner); err != nil {
		t.Fatal(err)
	}
	for _, id := range extra {
		id := id
		if j := job(t, id); j.State == "PENDING" {
			cycle(t)
			// a requeued job's BeginTime is about cred_expire (120 s) later
			waitFor(t, id, 200*time.Second, "running again", func(j *slurmlab.Job) bool { return j.State == "RUNNING" })
		}
	}
	t.Logf("gangtopo quota:\n%s", gangtopo(t, "quota", "--config", configFile, "--topology", clusterFile))
}

// TestBadInput: gangtopo.yaml naming an account Slurm does not know, then
// shares past the cluster's 128 GPUs: each cycle says what is wrong and
// changes nothing (the QOS limits stay, no job is moved or requeued); a
// negative share is refused with the file's line. (A failing sacctmgr is
// the controller package's TestQuotaDutyChangesNothingWhenSacctmgrFails.)
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	syncQuota(t)
	if err := lab.CancelAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitNodesIdle(ctx, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	before := qosLimits(t)
	id := submit(t, "teamb", "gt-teamb", 1)
	waitFor(t, id, 60*time.Second, "running", func(j *slurmlab.Job) bool { return j.State == "RUNNING" })
	good, err := os.ReadFile(configFile)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(configFile, good, 0o644)
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown account", "{account: teama, gpus: 64}", "{account: teamz, gpus: 64}", "account teamz is not in Slurm's accounting"},
		// 64 + 65 = 129 > 128
		{"past the cluster", "{account: teamb, gpus: 64}", "{account: teamb, gpus: 65}", "the shares sum to 129 GPUs, past the cluster's 128"},
	} {
		bad := strings.Replace(string(good), tc.from, tc.to, 1)
		if err := os.WriteFile(configFile, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		out := cycle(t)
		if !strings.Contains(out, tc.want) || !strings.Contains(out, "nothing is changed until it is mended") {
			t.Errorf("%s: the cycle does not say %q:\n%s", tc.name, tc.want, out)
		}
		if strings.Contains(out, "quota: QOS limit changed") || strings.Contains(out, "quota: waiting job moved") {
			t.Errorf("%s: the cycle changed something:\n%s", tc.name, out)
		}
		if after := qosLimits(t); after != before {
			t.Errorf("%s: QOS limits changed:\n%s\nto\n%s", tc.name, before, after)
		}
	}
	// a negative share is refused when the file is read, with its line
	bad := strings.Replace(string(good), "gpus: 64}", "gpus: -8}", 1)
	if err := os.WriteFile(configFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Getenv("GANGTOPO_BIN"), "quota", "--config", configFile, "--topology", clusterFile)
	cmd.Env = lab.Env()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "gangtopo.yaml:") || !strings.Contains(string(out), "negative") {
		t.Errorf("a negative share: %v\n%s", err, out)
	}
	if j := job(t, id); j.State != "RUNNING" || j.Fields["Restarts"] != "0" {
		t.Errorf("job %s: %s, restarts %s: bad input touched a job", id, j.State, j.Fields["Restarts"])
	}
}

func qosLimits(t *testing.T) string {
	t.Helper()
	out, err := lab.Run(context.Background(), slurmlab.DefaultTimeout, "sacctmgr", "-nP", "show", "qos", "format=name,grptres,preempt")
	if err != nil {
		t.Fatal(err)
	}
	return out
}
