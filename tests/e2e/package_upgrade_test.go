package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("DebianPackageUpgradeAsDocumented", testDebianPackageUpgradeAsDocumented)
}

// testDebianPackageUpgradeAsDocumented upgrades the package under a running
// cluster by docs/admin.md's "Upgrading the package", command by command
// as written there (the section must hold exactly these commands):
//   - the package make deb built for the root's release is installed with
//     dpkg, and slurmctld loads the plugins it installed; a controller is
//     started by hand from the installed /usr/bin/gangtopo (the lab has no
//     systemd: the case postinst cannot restart), and a leaf gang runs;
//   - dpkg -i of the later package (make e2e builds it, version .1 above,
//     binary VERSION-next): the running controller restarts itself on the
//     new binary in the same process and publishes on;
//   - gangtopo version prints the new version;
//   - scontrol reconfigure: slurmctld (26.05, re-executed) loads the new
//     plugin, which places the next gang;
//   - the first gang ran on throughout, never restarted.
//
// Then the package is removed without systemd (the plugins first taken
// out of slurm.conf): the controller sees its binary gone at its next
// cycle, says so and exits with status 0.
func testDebianPackageUpgradeAsDocumented(t *testing.T) {
	reset(t) // the gangs it places need the room an earlier test may have left taken
	release, err := labRelease()
	must(t, err)
	own, _ := packagesFor(t, release)
	next := nextPackage(t, release)
	a := newAdminHost(t, own, next)
	var pid int
	defer func() { restoreLab(t, a, pid) }()
	out := a.must("dpkg -i " + filepath.Base(own))
	if !strings.Contains(out, "gangtopo: installed; the daemons are not enabled") {
		t.Errorf("a fresh install does not say that nothing was started or enabled:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(slurmRoot(), "etc/systemd/system/multi-user.target.wants/gangtopo-controller.service")); !os.IsNotExist(err) {
		t.Errorf("a fresh install enabled the controller's unit (%v)", err)
	}
	oldVersion := strings.TrimSpace(a.must("gangtopo version"))
	must(t, lab.Restart(ctxT(t), installedPlugins()))
	pid, log := startPackagedController(t, "controller-upgrade", configFile, time.Second)
	gang := submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf")
	g := waitRunning(t, gang, 30*time.Second)
	if !strings.HasPrefix(g.AdminComment, "gangtopo v1 placed") {
		t.Fatalf("gang %s: decision %q, want the installed plugin's placement", gang, g.AdminComment)
	}

	nextVersion := debVersion(next)
	ctldLog := ctldLogSize()
	var answered map[string]bool
	steps := []deployStep{
		{cmd: "dpkg -i gangtopo_VERSION+slurmRELEASE_amd64.deb", check: func(t *testing.T, out string) {
			for _, want := range []string{"Unpacking gangtopo (" + nextVersion + ") over (" + debVersion(own) + ")",
				"Setting up gangtopo (" + nextVersion + ")",
				"gangtopo: systemd is not running: a gangtopo daemon started by hand restarts itself on the new binary at its next cycle"} {
				if !strings.Contains(out, want) {
					t.Errorf("dpkg -i does not say %q", want)
				}
			}
			line := waitLogLine(t, log, 30*time.Second, `"message":"restarted on the new binary"`)
			t.Logf("the controller (PID %d): %s", pid, line)
		}},
		{cmd: "gangtopo version", check: func(t *testing.T, out string) {
			if got := strings.TrimSpace(out); got != oldVersion+"-next" {
				t.Errorf("gangtopo version after the upgrade: %q, want %q", got, oldVersion+"-next")
			}
		}},
		// 26.05 re-executes slurmctld, which knows the nodes as unknown
		// until their slurmd registers again: a snapshot the controller
		// takes then holds no usable node, and the gang below was told
		// to wait (bound to the leaves, it started in one 2 s later) on
		// a loaded machine (CI at e7d8779 and here): the gang is
		// submitted once every node answers and the controller has
		// published since, as an admin submits once sinfo shows the
		// nodes back
		{cmd: "scontrol reconfigure", before: func(t *testing.T) { answered = lab.AnsweringNodes(ctxT(t)) }, check: func(t *testing.T, _ string) {
			waitCtldLogLine(t, ctldLog, "job_submit/gangtopo: loaded, built for Slurm "+release)
			must(t, lab.WaitAnswering(ctxT(t), answered))
			waitPublished(t, log, 30*time.Second)
			g2 := settle(t, submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"))
			if g2.State != "RUNNING" || !strings.HasPrefix(g2.AdminComment, "gangtopo v1 placed") || len(leavesOf(t, g2)) != 1 {
				t.Errorf("the gang after the reconfigure: %s on %v, decision %q; want it placed in one leaf", g2.State, g2.Nodes, g2.AdminComment)
			}
			t.Logf("after the reconfigure, by the new plugin: gang %s on %v", g2.ID, g2.Nodes)
		}},
	}
	runDocumented(t, a, "### Upgrading the package", steps, strings.NewReplacer("VERSION+slurmRELEASE", nextVersion))

	checkRestartedOnNewBinary(t, pid, log, oldVersion)
	if j, err := lab.ShowJob(ctxT(t), gang); err != nil || j.State != "RUNNING" || j.Fields["Restarts"] != "0" {
		t.Errorf("the gang that ran through the upgrade: %v, %+v; want RUNNING, never restarted", err, j)
	} else {
		t.Logf("gang %s ran through the upgrade on %v, %s restarts", gang, j.Nodes, j.Fields["Restarts"])
	}
	if v := a.must("dpkg-query -W -f '${Version}' gangtopo"); v != nextVersion {
		t.Errorf("installed version %q, want %q", v, nextVersion)
	}

	// removed without systemd, while the controller runs
	must(t, lab.Reconfigure(ctxT(t), slurmlab.Plugins{}))
	a.must("dpkg -r gangtopo")
	waitExit(t, pid, 30*time.Second)
	line := waitLogLine(t, log, time.Second, `was removed (the package removed, or the file deleted): this daemon stops for good`)
	t.Logf("the controller, after dpkg -r: %s", line)
	waitLogLine(t, log, time.Second, `"message":"stopped for good; nothing gangtopo held is left in Slurm"`)
}

// checkRestartedOnNewBinary checks that controller pid runs the file now
// installed (not the old one, removed: "(deleted)"), logged its restart
// from oldVersion, and published again since.
func checkRestartedOnNewBinary(t *testing.T, pid int, log, oldVersion string) {
	t.Helper()
	from := strings.TrimPrefix(oldVersion, "gangtopo ")
	waitLogLine(t, log, time.Second, `"from":"`+from+`","version":"`+from+`-next"`, `"message":"restarted on the new binary"`)
	var running, installed syscall.Stat_t
	must(t, syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &running))
	must(t, syscall.Stat(filepath.Join(slurmRoot(), "usr/bin/gangtopo"), &installed))
	if running.Ino != installed.Ino || running.Dev != installed.Dev {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		t.Errorf("controller %d runs %s (inode %d), not the installed /usr/bin/gangtopo (inode %d)", pid, exe, running.Ino, installed.Ino)
	}
	data, err := os.ReadFile(log)
	must(t, err)
	_, after, _ := strings.Cut(string(data), `"message":"restarted on the new binary"`)
	if !strings.Contains(after, `"message":"snapshot published"`) {
		t.Errorf("the restarted controller has not published:\n%s", tail(after, 20))
	}
}

// runDocumented runs the commands of a docs/admin.md section in the order
// written, each with its step's before and check, on the admin host; the
// section must hold exactly the steps' commands. subst makes a command
// concrete (placeholders such as VERSION).
func runDocumented(t *testing.T, a *adminHost, heading string, steps []deployStep, subst *strings.Replacer) {
	t.Helper()
	var want []string
	for _, s := range steps {
		want = append(want, s.cmd)
	}
	if diff := cmp.Diff(want, documentedCommands(t, "../../docs/admin.md", heading)); diff != "" {
		t.Fatalf("docs/admin.md's commands and this test's differ (-test +doc):\n%s", diff)
	}
	for _, s := range steps {
		if s.before != nil {
			s.before(t)
		}
		out := a.must(subst.Replace(s.cmd) + s.extra)
		if s.check != nil {
			s.check(t, out)
		}
		if t.Failed() {
			t.Fatalf("after %q:\n%s", s.cmd, out)
		}
	}
}

// waitPublished waits until the controller whose log is at path logs a
// snapshot published after this call.
func waitPublished(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	const published = `"message":"snapshot published"`
	count := func() int {
		data, _ := os.ReadFile(path)
		return strings.Count(string(data), published)
	}
	for before, deadline := count(), time.Now().Add(limit); count() <= before; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(path)
			t.Fatalf("%s: no snapshot published within %v:\n%s", path, limit, tail(string(data), 20))
		}
	}
}

// waitCtldLogLine waits for a line of slurmctld's log, after offset, that
// holds want.
func waitCtldLogLine(t *testing.T, offset int64, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(ctldLogSince(offset), want); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld's log has no %q after 30 s:\n%s", want, tail(ctldLogSince(offset), 20))
		}
	}
}

// restoreLab purges the package and puts the lab back as the other tests
// expect it (the build's plugins, a fresh state), after stopping the
// controller the test started (by its PID) if it still runs. The purge is
// forced: a test that stopped half way may leave slurm.conf naming the
// plugins, which slurmctld has mapped until the restart that follows.
func restoreLab(t *testing.T, a *adminHost, controller int) {
	t.Helper()
	if controller > 0 && lab.Alive(controller) {
		_ = syscall.Kill(controller, syscall.SIGKILL)
	}
	if out, err := a.run("GANGTOPO_FORCE_REMOVE=1 dpkg --purge gangtopo"); err != nil {
		t.Errorf("dpkg --purge gangtopo: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(slurmRoot(), "usr/bin/gangtopo")); !os.IsNotExist(err) {
		t.Errorf("after dpkg --purge /usr/bin/gangtopo is still there (%v)", err)
	}
	if err := lab.Restart(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))); err != nil {
		t.Fatal(err)
	}
	publish(t)
}
