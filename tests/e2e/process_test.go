package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// process is a gangtopo command run in the background (a controller
// daemon, defrag apply), its output in a file of the lab.
type process struct {
	name string
	cmd  *exec.Cmd
	out  string
}

// startGangtopo starts gangtopo with args against the lab.
func startGangtopo(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := startGangtopoIn(t, lab, filepath.Dir(snapshotFile), name, args...)
	endHolds(t, p)
	return p
}

// startGangtopoIn starts gangtopo with args against lab l, its output in
// dir; killed when the test ends.
func startGangtopoIn(t *testing.T, l *slurmlab.Lab, dir, name string, args ...string) *process {
	t.Helper()
	out := filepath.Join(dir, name+".log")
	f, err := os.Create(out)
	must(t, err)
	cmd := exec.Command(os.Getenv("GANGTOPO_BIN"), args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = l.Env(), f, f
	must(t, cmd.Start())
	f.Close()
	p := &process{name: name, cmd: cmd, out: out}
	t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	return p
}

// stop signals the process and waits for it; its exit status (-1: killed
// by a signal).
func (p *process) stop(sig syscall.Signal) int {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState.ExitCode()
	}
	p.signal(sig)
	_ = p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig without waiting.
func (p *process) signal(sig syscall.Signal) {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// output is what the process printed so far.
func (p *process) output() string {
	data, _ := os.ReadFile(p.out)
	return string(data)
}

// line is the first line of the process's output holding want ("" when
// none does).
func (p *process) line(want string) string {
	for _, l := range strings.Split(p.output(), "\n") {
		if strings.Contains(l, want) {
			return l
		}
	}
	return ""
}

// waitLogged waits until the daemon's log says want.
func (p *process) waitLogged(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within %s:\n%s", p.name, want, limit, p.output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
