package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// What the package tests (package_upgrade_test.go, package_remove_test.go)
// share: a shell on a host of the root's release, the package's own
// plugins loaded by the lab, a controller started from the package.

// adminHost is an administrator's shell on a host of the root's release,
// in a scratch directory that holds the packages: the lab's Slurm clients,
// and dpkg, dpkg-query and gangtopo of the root (what the package
// installed, not the build's), on its PATH.
type adminHost struct {
	t   *testing.T
	dir string
}

func newAdminHost(t *testing.T, packages ...string) *adminHost {
	t.Helper()
	if slurmRoot() == "" {
		t.Fatal("the package tests install into the series' Debian root (make e2e E2E_SLURM=sid); on the host's own Slurm they would change the host's plugin directory, so make e2e leaves them out there (E2E_SKIP_host)")
	}
	a := &adminHost{t: t, dir: t.TempDir()} // under the temporary directory, which the root sees
	must(t, os.Chmod(a.dir, 0o755))
	must(t, os.Mkdir(filepath.Join(a.dir, "bin"), 0o755))
	for _, name := range []string{"dpkg", "dpkg-query", "gangtopo"} {
		must(t, lab.RootCommand(filepath.Join(a.dir, "bin"), name, "/usr/bin/"+name))
	}
	for _, p := range packages {
		data, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(a.dir, filepath.Base(p)), data, 0o644))
	}
	return a
}

// run runs one command line with sh, as typed, and returns its output
// (both streams) and error; each is logged.
func (a *adminHost) run(line string) (string, error) {
	a.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = a.dir
	path := os.Getenv("PATH")
	for _, kv := range lab.Env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	cmd.Env = append(lab.Env(), "PATH="+filepath.Join(a.dir, "bin")+":"+path)
	out, err := cmd.CombinedOutput()
	a.t.Logf("$ %s  (exit: %v)\n%s", line, err, out)
	return string(out), err
}

// must runs a line that has to succeed.
func (a *adminHost) must(line string) string {
	a.t.Helper()
	out, err := a.run(line)
	if err != nil {
		a.t.Fatalf("%s: %v", line, err)
	}
	return out
}

// installedPlugins loads both plugins from where the package put them,
// Debian's PluginDir inside the root.
func installedPlugins() slurmlab.Plugins {
	return slurmlab.Plugins{Dir: slurmlab.StockPluginDir, JobSubmit: true, Spank: true, CtldEnv: []string{"GANGTOPO_CONFIG=" + configFile}}
}

// nextPackage is the later version of the package for release that make
// e2e builds apart (GANGTOPO_DEB_NEXT_DIR), for the upgrade.
func nextPackage(t *testing.T, release string) string {
	t.Helper()
	dir := os.Getenv("GANGTOPO_DEB_NEXT_DIR")
	if dir == "" {
		t.Fatal("GANGTOPO_DEB_NEXT_DIR is not set: run make e2e (it builds the later package)")
	}
	all, err := filepath.Glob(filepath.Join(dir, "gangtopo_*+slurm"+release+"_amd64.deb"))
	must(t, err)
	if len(all) != 1 {
		t.Fatalf("%s holds %v: want one package for Slurm %s", dir, all, release)
	}
	return all[0]
}

// debVersion reads the version from a package's name:
// gangtopo_0.1.gabc+slurm26.05.5_amd64.deb is 0.1.gabc+slurm26.05.5.
func debVersion(path string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "gangtopo_"), "_amd64.deb")
}

// startPackagedController starts the controller daemon of the installed
// package (/usr/bin/gangtopo inside the root) beside the lab's slurmctld,
// as a site without systemd starts it by hand, with config and a cycle
// every interval, and waits for its first published snapshot. It returns
// the PID and the path of its log.
func startPackagedController(t *testing.T, name, config string, interval time.Duration) (int, string) {
	t.Helper()
	log := lab.Path("log", name+".out")
	_ = os.Remove(log)
	pid, err := lab.StartInRoot(name, nil, "/usr/bin/gangtopo", "daemon", "--role", "controller", "--topology", clusterFile,
		"-o", snapshotFile, "--config", config, "--interval", interval.String(), "--log-level", "debug")
	must(t, err)
	waitLogLine(t, log, time.Minute, `"message":"snapshot published"`)
	return pid, log
}

// waitLogLine waits until a line of the file at path holds every part,
// and returns that line.
func waitLogLine(t *testing.T, path string, limit time.Duration, parts ...string) string {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		if line, ok := lineWith(string(data), parts...); ok {
			return line
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no line with %q after %v:\n%s", path, parts, limit, tail(string(data), 30))
		}
	}
}

// lineWith finds the first line of text that holds every part.
func lineWith(text string, parts ...string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return line, true
		}
	}
	return "", false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitExit waits until process pid of the lab has exited.
func waitExit(t *testing.T, pid int, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); lab.Alive(pid); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs after %v", pid, limit)
		}
	}
}
