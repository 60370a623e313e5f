package slurmlab

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// TestStopLeavesReusedNamespaceAlone: the kernel gives a freed mount
// namespace's number to the next new one. A lab stopping kills what is
// left in its slurmds' namespaces; a process of another lab, started in a
// new namespace after this lab's slurmd is gone, must survive that
// (two series run side by side in make test; before the namespaces were
// held open, one lab's stop killed the other's root holder and slurmd).
func TestStopLeavesReusedNamespaceAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		needs.Skip(t, "unshare --mount needs root")
	}
	dir := t.TempDir()
	start := func(marked bool) *exec.Cmd {
		cmd := exec.Command("/usr/bin/unshare", "--mount", "--propagation", "private", "--", "sleep", "60")
		if marked {
			cmd.Env = append(os.Environ(), EnvMarker+"="+dir)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// ready once unshare has made the namespace and exec'd sleep
		// (while an exec replaces it, /proc/PID/environ, which belongs
		// reads, can read empty)
		host, _ := os.Readlink("/proc/self/ns/mnt")
		pid := cmd.Process.Pid
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && ns != host && string(comm) == "sleep\n" {
				return cmd
			}
		}
		t.Fatal("unshare made no namespace, or did not run sleep in it")
		return nil
	}
	slurmd := start(true)
	spaces, release := slurmdNamespaces([]proc{{"slurmd-node01", slurmd.Process.Pid}}, dir)
	defer release()
	if len(spaces) != 1 {
		t.Fatalf("namespaces %v, want the slurmd's", spaces)
	}
	_ = slurmd.Process.Kill()
	_ = slurmd.Wait()
	other := start(false) // another lab's process, in a namespace of its own
	if left := killNamespaced(spaces, nil); left != 0 {
		t.Errorf("%d left in the stopped lab's namespaces", left)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil || isZombie(other.Process.Pid) {
		t.Fatalf("another lab's process was killed by this lab's stop")
	}
}
