package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("ExpeditedGangRestartsOnSpareAtOnce", testExpeditedGangRestartsOnSpareAtOnce)
	register("StoppedControllerDoesNotHoldRequeue", testStoppedControllerDoesNotHoldRequeue)
}

// wakeRig is a lab whose EpilogSlurmctld runs gangtopo wake (wakeLab,
// wakeHook) with its controller serving wakes on sock: bin is the gangtopo
// the hook runs, log where the hook's answers go.
type wakeRig struct {
	l              *slurmlab.Lab
	c              *process
	bin, sock, log string
}

// startWakeRig skips below Slurm 25.11 (no expedited requeue), else
// starts a wake lab whose hook waits hookTimeout at most, with
// gangtopo.yaml's more, and its controller at interval, acting; the lab
// stops (its slurmctld log shown on failure) when the test ends.
func startWakeRig(t *testing.T, hookTimeout time.Duration, interval, more string) *wakeRig {
	t.Helper()
	if !lab.Release.AtLeast(25, 11) {
		t.Skipf("Slurm's expedited requeue is 25.11 and later (this lab: %s)", lab.Release)
	}
	dir := t.TempDir()
	r := &wakeRig{sock: filepath.Join(dir, "controller.sock")}
	var hook string
	r.bin, hook, r.log = wakeHook(t, dir, r.sock, hookTimeout)
	var snap string
	r.l, snap = wakeLab(t, dir, hook, more)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("slurmctld's log:\n%s", r.l.LogTail("slurmctld.log", 60))
		}
		r.l.Stop()
	})
	r.c = startGangtopoIn(t, r.l, dir, "controller", "daemon", "--role", "controller", "--interval", interval, "--log-format", "json", "--log-level", "debug",
		"--topology", filepath.Join(dir, "cluster.yaml"), "-o", snap, "--config", filepath.Join(dir, "gangtopo.yaml"), "--wake-socket", r.sock)
	r.c.waitLogged(t, "\"state\":\"acting\"", 40*time.Second)
	return r
}

// wakeHook writes, in dir, the gangtopo binary where the chrooted hook
// sees it and an EpilogSlurmctld script running gangtopo wake on sock
// with timeout, its answer appended to wake.log; it returns the binary,
// the script and the log.
func wakeHook(t *testing.T, dir, sock string, timeout time.Duration) (bin, hook, log string) {
	t.Helper()
	bin = filepath.Join(dir, "gangtopo")
	data, err := os.ReadFile(os.Getenv("GANGTOPO_BIN"))
	must(t, err)
	must(t, os.WriteFile(bin, data, 0o755))
	hook, log = filepath.Join(dir, "epilog-slurmctld"), filepath.Join(dir, "wake.log")
	must(t, os.WriteFile(hook, []byte(fmt.Sprintf("#!/bin/sh\nexec %s wake --socket %s --timeout %s 2>>%s\n", bin, sock, timeout, log)), 0o755))
	return bin, hook, log
}

// testExpeditedGangRestartsOnSpareAtOnce: issue 26's spares under Slurm's
// expedited requeue (25.11+), with slurm.conf's EpilogSlurmctld running
// `gangtopo wake` (docs/admin.md). The controller's cycle is 30 s here:
// only the wake can re-bind the gang in time. One spare a leaf; a 24-GPU
// leaf:required gang, --requeue=expedite, runs on node01-03; leaf2-4 have
// two nodes busy each; a whole-node job pinned to node01 waits. node02 is
// set down: Slurm requeues the gang and runs the hook, which holds the
// requeue until a woken cycle has re-bound the gang to leaf1 with its
// spare node04 allowed (and two seconds after the wake at the soonest:
// actuate.RequeueMargin); the gang, at the top of the queue, restarts on
// node01, node03 and node04 as soon as the requeue ends, before the job
// waiting for node01 can take it, and long before the next 30 s cycle.
func testExpeditedGangRestartsOnSpareAtOnce(t *testing.T) {
	r := startWakeRig(t, 20*time.Second, "30s", "spares:\n  tier: leaf\n  per_domain: 1\n")
	l, c, bin, sock, wakeLog := r.l, r.c, r.bin, r.sock, r.log
	// a cycle now and its duties, by hand (no job: whatever ran)
	pollNow := func() {
		t.Helper()
		out, err := exec.Command(bin, "wake", "--socket", sock, "--strict", "--timeout", "40s").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok:") {
			t.Fatalf("gangtopo wake by hand: %v %s\ncontroller:\n%s", err, out, tail(c.output(), 20))
		}
	}
	sub := func(args ...string) string {
		id, err := l.Submit(context.Background(), nil, append(append([]string{"-o", "/dev/null"}, args...), "--wrap", "sleep 100000")...)
		must(t, err)
		return id
	}
	var busy []string
	for _, n := range []string{"node05", "node09", "node13"} {
		busy = append(busy, sub("-w", n, "--gpus=8", "--cpus-per-gpu=1"))
	}
	for _, id := range busy {
		waitRunningIn(t, l, id)
	}
	pollNow()
	gang := sub("--gpus=24", "--cpus-per-gpu=1", "--gang-topology=leaf:required", "--requeue=expedite")
	ran := waitRunningIn(t, l, gang)
	if strings.Join(ran.Nodes, ",") != "node01,node02,node03" {
		t.Fatalf("gang %s runs on %v; want node01-03, the spare node04 excluded (%s)", gang, ran.Nodes, ran.AdminComment)
	}
	for _, n := range []string{"node06", "node10", "node14"} {
		busy = append(busy, sub("-w", n, "--gpus=8", "--cpus-per-gpu=1"))
	}
	for _, id := range busy[3:] {
		waitRunningIn(t, l, id)
	}
	waiter := sub("-w", "node01", "--gpus=8", "--cpus-per-gpu=1")
	pollNow() // the controller has seen the gang running on node01-03

	failed := "node02"
	at := time.Now()
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := l.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	again := waitRestarted(t, l, gang, 25*time.Second)
	took := time.Since(at)
	t.Logf("Slurm %s: gang %s ran on %v, %s failed, restarted on %v %.1f s later: %s", l.Release, gang, ran.Nodes, failed, again.Nodes, took.Seconds(), again.AdminComment)
	if strings.Join(again.Nodes, ",") != "node01,node03,node04" || !strings.Contains(again.AdminComment, " spares=leaf1") {
		t.Errorf("requeued gang %s restarted on %v, decision %q; want node01, node03 and the spare node04 (spares=leaf1)\n%s",
			gang, again.Nodes, again.AdminComment, tail(c.output(), 40))
	}
	if j, err := l.ShowJob(ctxT(t), waiter); err != nil || j.State == "RUNNING" {
		t.Errorf("job %s waiting for node01: %+v, %v; want still pending (the gang restarted first)", waiter, j, err)
	}
	for _, want := range []string{`"message":"woken (EpilogSlurmctld or gangtopo wake): a cycle now"`, `"job":"` + gang + `"`, "re-bound a gang requeued after a node failure"} {
		if !strings.Contains(c.output(), want) {
			t.Errorf("controller log lacks %s:\n%s", want, tail(c.output(), 40))
		}
	}
	// the woken round saw the gang being requeued: the answer held the
	// requeue two seconds after the wake (a restart in the second of the
	// kill may be refused by slurmd: actuate/restart.go)
	if hooked, _ := os.ReadFile(wakeLog); !strings.Contains(string(hooked), "gangtopo wake: ok:") || !strings.Contains(string(hooked), "the requeue held 2s after the wake") {
		t.Errorf("EpilogSlurmctld's gangtopo wake said %q; want ok for the gang's requeue, held 2s", hooked)
	}
}

// testStoppedControllerDoesNotHoldRequeue: a fault of the wake. The
// controller is stopped (SIGSTOP: it accepts the hook's connection and
// never answers) when a node under a 2-node --requeue=expedite gang fails:
// EpilogSlurmctld's gangtopo wake gives up after its --timeout (3 s) and
// Slurm finishes the requeue then, once: the hook holds a requeue that
// long at most, and never fails or loses the job.
func testStoppedControllerDoesNotHoldRequeue(t *testing.T) {
	r := startWakeRig(t, 3*time.Second, "1s", "")
	l, c, wakeLog := r.l, r.c, r.log
	gang, err := l.Submit(context.Background(), nil, "-o", "/dev/null", "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf", "--requeue=expedite", "--wrap", "sleep 100000")
	must(t, err)
	ran := waitRunningIn(t, l, gang)
	time.Sleep(2 * time.Second) // the controller has seen it running
	c.signal(syscall.SIGSTOP)
	defer c.signal(syscall.SIGCONT)
	failed := ran.Nodes[0]
	at := time.Now()
	for _, state := range []string{"State=DOWN", "State=DRAIN"} {
		if out, err := l.Run(ctxT(t), 0, "scontrol", "update", "NodeName="+failed, state, "Reason=gangtopo-e2e"); err != nil {
			t.Fatalf("setting %s %s: %v %s", failed, state, err, out)
		}
	}
	// the requeue ends when the hook returns: the job loses COMPLETING
	var j *slurmlab.Job
	deadline := at.Add(20 * time.Second)
	for {
		j, err = l.ShowJob(ctxT(t), gang)
		must(t, err)
		if j.Fields["Restarts"] == "1" && !strings.Contains(j.State, "COMPLETING") && j.State != "RUNNING" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(at)
	hooked, _ := os.ReadFile(wakeLog)
	t.Logf("Slurm %s: gang %s on %v, %s failed with the controller stopped: %s, %s restarts, %.1f s later; the hook: %s",
		l.Release, gang, ran.Nodes, failed, j.State, j.Fields["Restarts"], took.Seconds(), strings.TrimSpace(string(hooked)))
	c.signal(syscall.SIGCONT)
	line := strings.TrimSpace(string(hooked))
	if !strings.Contains(line, "no answer from the controller within 3s") {
		line = ""
	}
	record(t, faults.Row{Fault: "controller stopped while EpilogSlurmctld's gangtopo wake waits on it",
		NoJobLost:          faults.Check(j.State != "" && j.State != "CANCELLED" && j.State != "FAILED", "gang %s is %s", gang, j.State),
		NothingHeldForEver: faults.Check(took < 12*time.Second && j.State != "COMPLETING", "the requeue still held %.1f s after the failure (%s)", took.Seconds(), j.State),
		NoDoubleRequeue:    faults.Check(j.Fields["Restarts"] == "1", "restarts %s, want 1", j.Fields["Restarts"]),
		NothingLeft:        faults.NA, SnapshotFresh: faults.NA, LogLine: line})
}

// wakeLab is a lab of the e2e cluster whose slurm.conf has Slurm's
// expedited requeue on and EpilogSlurmctld set to hook, with gangtopo.yaml
// (labConfig plus more) and the snapshot path in dir.
func wakeLab(t *testing.T, dir, hook, more string) (*slurmlab.Lab, string) {
	t.Helper()
	_, data, err := readCluster(clusterSource)
	must(t, err)
	cf := filepath.Join(dir, "cluster.yaml")
	must(t, os.WriteFile(cf, data, 0o644))
	c, _, err := readCluster(cf)
	must(t, err)
	cfg := filepath.Join(dir, "gangtopo.yaml")
	snap := filepath.Join(dir, "snapshot.json")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, cf, snap)+more), 0o644))
	l, err := slurmlab.Start(context.Background(), slurmlab.Options{Cluster: c, ClusterFile: cf, Owner: os.Getpid(),
		Root: slurmRoot(), Expose: pluginDirs(),
		Plugins: slurmlab.Plugins{Dir: os.Getenv("GANGTOPO_PLUGINS"), JobSubmit: true, Spank: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + cfg}},
		Extra:   []string{"SlurmctldParameters=enable_expedited_requeue", "EpilogSlurmctld=" + hook}})
	must(t, err)
	return l, snap
}
