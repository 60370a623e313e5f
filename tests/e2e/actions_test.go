package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/e2e/faults"
)

func init() {
	register("OneControllerActs", testOneControllerActs)
	register("OffSwitchPutsPinsBack", testOffSwitchPutsPinsBack)
}

// startController starts `gangtopo daemon --role controller` (not --once:
// its duties run in their own loop) with config, publishing snapshot every
// second and logging JSON; more are further arguments.
func startController(t *testing.T, name, config, snapshot string, more ...string) *process {
	t.Helper()
	return startGangtopo(t, name, append([]string{"daemon", "--role", "controller", "--interval", "1s", "--log-format", "json",
		"--topology", clusterFile, "-o", snapshot, "--config", config}, more...)...)
}

// markedPending submits a held job (it stays pending) and pins it as
// gangtopo's controller does: ReqNodeList and the mark in its
// AdminComment, written by root (an administrator), with the given
// expiry and owner.
func markedPending(t *testing.T, by string, until time.Time) string {
	t.Helper()
	id := submit(t, "-p", "debug", "--gpus=1", "--cpus-per-gpu=1", "--hold")
	mark := fmt.Sprintf("gangtopo-pin: by=%s nodes=node05 until=%s", by, until.UTC().Format(time.RFC3339))
	if out, err := lab.Run(ctxT(t), 0, "scontrol", "update", "JobId="+id, "ReqNodeList=node05", "AdminComment="+mark); err != nil {
		t.Fatalf("pinning job %s: %v %s", id, err, out)
	}
	return id
}

// pinGone waits until job id carries neither the mark nor the node list.
func pinGone(t *testing.T, id string, limit time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if !strings.Contains(j.AdminComment, "gangtopo-pin") && nullable(j.ReqNodes) == "" {
			return true
		}
		time.Sleep(300 * time.Millisecond)
	}
	return false
}

// auditUnpins counts the unpin changes made (outcome lines) in an audit
// log, by controller process (the PID that begins each ref).
func auditUnpins(t *testing.T, path, job string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	must(t, err)
	out := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		s := string(line)
		if strings.Contains(s, `"action":"unpin"`) && strings.Contains(s, `"job":"`+job+`"`) && strings.Contains(s, `"result":"ok"`) {
			ref := s[strings.Index(s, `"ref":"`)+7:]
			out[ref[:strings.IndexByte(ref, '-')]]++
		}
	}
	return out
}

// testOneControllerActs: issue 22, "two controllers running". Three
// controllers publish the lab's snapshot at once: two on this host with
// the same gangtopo.yaml (two units, or a unit and a hand-run daemon), one
// configured as a backup controller's host (actions.host: a name other
// than the slurmctld in control's). Exactly one acts: an expired pin is
// undone once, by one process; the second says another holds the lock, the
// backup that the slurmctld in control runs elsewhere. When the acting one
// is killed, the second takes over and undoes the next expired pin.
func testOneControllerActs(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, clusterFile, snap)), 0o644))
	backupCfg := filepath.Join(dir, "gangtopo-backup.yaml")
	backupSnap := filepath.Join(dir, "backup", "snapshot.json")
	must(t, os.MkdirAll(filepath.Dir(backupSnap), 0o755))
	// labConfig ends with its actions: section: this host is ctl-backup
	must(t, os.WriteFile(backupCfg, []byte(fmt.Sprintf(labConfig, clusterFile, backupSnap)+"  host: ctl-backup\n"), 0o644))

	a := startController(t, "a", cfg, snap)
	a.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)
	b := startController(t, "b", cfg, snap)
	backup := startController(t, "backup", backupCfg, backupSnap)
	b.waitLogged(t, "another controller on this host holds", 20*time.Second)
	backup.waitLogged(t, "not here (ctl-backup)", 20*time.Second)

	first := markedPending(t, "quota", time.Now().Add(-time.Minute))
	undone := pinGone(t, first, 20*time.Second)
	time.Sleep(3 * time.Second) // every controller has had rounds to act
	byPID := auditUnpins(t, auditLog(snap), first)
	backupActs := auditUnpins(t, auditLog(backupSnap), first)

	a.stop(syscall.SIGKILL) // the acting controller dies; b takes the lock
	b.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)
	second := markedPending(t, "quota", time.Now().Add(-time.Minute))
	takenOver := pinGone(t, second, 20*time.Second)
	// the outcome line follows the update that undid the pin: the pin can
	// be seen gone before it is written (a loaded machine did, once)
	after := auditUnpins(t, auditLog(snap), second)
	for deadline := time.Now().Add(10 * time.Second); takenOver && sum(after) == 0 && time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		after = auditUnpins(t, auditLog(snap), second)
	}

	once := len(byPID) == 1 && sum(byPID) == 1 && len(backupActs) == 0
	faults.Record(faults.Row{Fault: "two controllers running (and a backup's)", NoJobLost: faults.Check(jobPending(t, first) && jobPending(t, second), "a job left the queue"),
		NothingHeldForEver: faults.Check(undone && takenOver, "a pin stayed after it expired"), NoDoubleRequeue: faults.NA,
		NothingLeft:   faults.Check(once, "the pin was undone %v times by %d processes (backup %v)", sum(byPID), len(byPID), backupActs),
		SnapshotFresh: faults.Check(fresh(snap, 10*time.Second) && fresh(backupSnap, 10*time.Second), "a snapshot aged"),
		LogLine:       firstLine(b.output(), "another controller on this host holds")})
	switch {
	case !undone:
		t.Errorf("the expired pin of job %s was not undone:\n%s", first, a.output())
	case !once:
		t.Errorf("job %s's pin undone by %v (processes -> count), backup %v: want exactly one process, once", first, byPID, backupActs)
	case !takenOver || sum(after) != 1:
		t.Errorf("after the acting controller died, job %s's expired pin: undone %v, %v:\n%s", second, takenOver, after, b.output())
	}
	if strings.Contains(backup.output(), `"action":"unpin"`) {
		t.Errorf("the backup's controller changed Slurm:\n%s", backup.output())
	}
}

// testOffSwitchPutsPinsBack: issue 22, "the fast off switch in admin.md
// must stop the controller's actions too". A pin not yet expired stays
// while gangtopo is in JobSubmitPlugins; with gangtopo out of it (the
// documented off switch: slurm.conf edited, scontrol reconfigure) the
// running controller puts the pin back within its next minute, and makes
// no new change.
func testOffSwitchPutsPinsBack(t *testing.T) {
	reset(t)
	defer lab.CancelAll(context.Background())
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	cfg := filepath.Join(dir, "gangtopo.yaml")
	// the pin is defrag's, whose pin_preemption is on (the lab's Slurm
	// preempts nothing: no new pin is made)
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(labConfig, clusterFile, snap)+"defrag:\n  pin_preemption: true\n"), 0o644))
	id := markedPending(t, "defrag", time.Now().Add(time.Hour))
	c := startController(t, "off", cfg, snap)
	c.waitLogged(t, "\"state\":\"acting\"", 20*time.Second)
	time.Sleep(3 * time.Second)
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	keptWhileOn := strings.Contains(j.AdminComment, "gangtopo-pin")

	stock := gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))
	stock.JobSubmit = false
	must(t, lab.Reconfigure(ctxT(t), stock))
	defer func() { must(t, lab.Reconfigure(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS")))) }()
	c.stop(syscall.SIGKILL) // a restarted controller reads slurm.conf at once (a running one within a minute)
	c = startController(t, "off2", cfg, snap)
	putBack := pinGone(t, id, 30*time.Second)
	c.waitLogged(t, "not in slurm.conf's JobSubmitPlugins", 10*time.Second)
	faults.Record(faults.Row{Fault: "off switch (gangtopo out of JobSubmitPlugins)", NoJobLost: faults.Check(jobPending(t, id), "the job left the queue"),
		NothingHeldForEver: faults.Check(putBack, "the pin stayed"), NoDoubleRequeue: faults.NA,
		NothingLeft:   faults.Check(keptWhileOn && putBack, "kept while on %v, put back %v", keptWhileOn, putBack),
		SnapshotFresh: faults.Check(fresh(snap, 10*time.Second), "the snapshot aged"), LogLine: firstLine(c.output(), "JobSubmitPlugins")})
	if !keptWhileOn {
		t.Errorf("job %s's pin (not expired, defrag's, pin_preemption on) was undone while gangtopo was on: %q", id, j.AdminComment)
	}
	if !putBack {
		t.Errorf("with gangtopo out of JobSubmitPlugins, job %s's pin stayed:\n%s", id, c.output())
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// jobPending says the job is still pending (held, as submitted).
func jobPending(t *testing.T, id string) bool {
	j, err := lab.ShowJob(ctxT(t), id)
	return err == nil && j.State == "PENDING"
}

// fresh says the snapshot file was written within age.
func fresh(path string, age time.Duration) bool {
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) < age
}

// firstLine is the first line of a daemon's log containing s ("" when
// none): of a JSON line, its state, or else its message.
func firstLine(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, s) {
			continue
		}
		var e struct{ State, Message string }
		if json.Unmarshal([]byte(l), &e) == nil && e.State+e.Message != "" {
			if e.State != "" {
				return e.State
			}
			return e.Message
		}
		return strings.TrimSpace(l)
	}
	return ""
}
