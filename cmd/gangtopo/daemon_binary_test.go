package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/testlog"
)

// A running daemon follows the file it was started from, as a package
// upgrade and removal change it: replaced by a new file (install(1), dpkg),
// it restarts on it in the same process (exec: same PID, the new version's
// log line); removed, it stops for good with exit status 0 (which
// systemd's Restart=on-failure leaves be) and a line saying so. The
// binaries are built here, as v1 and v2.
func TestDaemonFollowsItsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gangtopo twice")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "bin", "gangtopo")
	buildVersion(t, "v1", path)
	buildVersion(t, "v2", filepath.Join(dir, "gangtopo-v2"))
	cmd := exec.Command(path, "daemon", "--role", "controller", "--topology", slurmTestdata+"lab8.yaml",
		"-o", filepath.Join(dir, "snapshot.json"), "--interval", "100ms",
		"--sinfo-json", slurmTestdata+"sinfo.json", "--squeue-json", slurmTestdata+"squeue.json")
	cmd.Env = append(os.Environ(), "GANGTOPO_CONFIG="+filepath.Join(dir, "none.yaml"))
	var logs testlog.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitLog(t, &logs, `"message":"controller ready"`)

	// the upgrade: a new file renamed over the old one
	if err := os.Rename(filepath.Join(dir, "gangtopo-v2"), path); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &logs, `"from":"v1","version":"v2"`, `"message":"restarted on the new binary"`)
	exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
	if err != nil || exe != path {
		t.Errorf("process %d runs %q (%v), want the new %s", cmd.Process.Pid, exe, err, path)
	}

	// the removal
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("daemon exited with %v after its binary was removed, want status 0\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("daemon still runs 10 s after its binary was removed:\n%s", logs.String())
	}
	for _, want := range [][]string{
		{`"version":"v1"`, `"message":"` + path + ` was replaced by a new file (an upgrade): restarting on it"`},
		{`"message":"` + path + ` was removed (the package removed, or the file deleted): this daemon stops for good, after putting back what it holds in Slurm"`},
		{`"message":"stopped for good; nothing gangtopo held is left in Slurm"`},
	} {
		if !logged(logs.String(), want...) {
			t.Errorf("no log line with %q:\n%s", want, logs.String())
		}
	}
}

// buildVersion builds gangtopo as version into out.
func buildVersion(t *testing.T, version, out string) {
	t.Helper()
	b := exec.Command("go", "build", "-o", out, "-ldflags", "-X main.version="+version, ".")
	if msg, err := b.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
}

// waitLog waits for a log line holding every part.
func waitLog(t *testing.T, logs *testlog.Buffer, parts ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if logged(logs.String(), parts...) {
			return
		}
	}
	t.Fatalf("no log line with %q after 10 s:\n%s", parts, logs.String())
}

// logged says whether one line of logs holds every part.
func logged(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
