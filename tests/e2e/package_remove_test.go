package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

func init() {
	register("DebianPackageRemoveAsDocumented", testDebianPackageRemoveAsDocumented)
}

// testDebianPackageRemoveAsDocumented removes the package while its
// controller runs and holds room for a gang, first as an administrator
// who forgot Slurm's configuration, then by docs/admin.md's "Removing the
// package", command by command as written there:
//   - slurmctld loads the installed plugins; a controller started from the
//     installed /usr/bin/gangtopo runs (gangtopo.yaml with a defrag:
//     section, one cycle an hour: it will not tend the hold itself); on a
//     fragmented cluster `gangtopo defrag apply --wait 0` holds leaf2 for a
//     waiting gang, requeues the job there and leaves the hold to the
//     controller; the gang starts inside the hold;
//   - dpkg -r is refused, naming slurm.conf's JobSubmitPlugins line and
//     plugstack.conf's line, and changes nothing: the package installed,
//     the controller running;
//   - the documented steps: gangtopo out of JobSubmitPlugins and scontrol
//     reconfigure; gangtopo unbind --clear; the plugstack.conf line out;
//     dpkg -r gangtopo, which now removes the package;
//   - the controller is stopped as postrm's systemctl stop stops it on a
//     host with systemd (SIGTERM: the lab has no systemd, the test sends
//     it): with its binary gone it stops for good, ends the hold (the
//     running gang taken out first, an audit line), logs each and says
//     nothing is left, and exits with status 0;
//   - no job was lost: every job is still there, the gang runs outside any
//     reservation; slurmctld still runs, and restarts on its saved state
//     (it would exit at start if slurm.conf still named the plugin) with
//     every job.
func testDebianPackageRemoveAsDocumented(t *testing.T) {
	reset(t) // the gangs it places need the room an earlier test may have left taken
	release, err := labRelease()
	must(t, err)
	own, _ := packagesFor(t, release)
	a := newAdminHost(t, own)
	var pid int
	defer func() { restoreLab(t, a, pid) }()
	a.must("dpkg -i " + filepath.Base(own))
	must(t, lab.Restart(ctxT(t), installedPlugins()))
	cfg := defragConfig(t)
	pid, log := startPackagedController(t, "controller-remove", cfg, time.Hour)
	gang, jobs := heldGang(t, cfg)

	refusedRemoval(t, a, pid)

	steps := []deployStep{
		{cmd: "scontrol reconfigure", before: func(t *testing.T) {
			must(t, lab.SetPlugins(slurmlab.Plugins{Dir: slurmlab.StockPluginDir, Spank: true})) // gangtopo out of JobSubmitPlugins
		}},
		{cmd: "gangtopo unbind --clear", check: contains("gangtopo: no pending job carries a gangtopo binding")},
		{cmd: "dpkg -r gangtopo", before: func(t *testing.T) {
			must(t, lab.SetPlugins(slurmlab.Plugins{})) // the plugstack.conf line out
		}, check: func(t *testing.T, out string) {
			for _, want := range []string{"Removing gangtopo (" + debVersion(own) + ")",
				"gangtopo: systemd is not running: a gangtopo daemon started by hand sees its binary gone at its next cycle, puts back what it holds in Slurm and exits"} {
				if !strings.Contains(out, want) {
					t.Errorf("dpkg -r does not say %q", want)
				}
			}
			if _, err := os.Stat(filepath.Join(slurmRoot(), "usr/bin/gangtopo")); !os.IsNotExist(err) {
				t.Errorf("after dpkg -r /usr/bin/gangtopo is still there (%v)", err)
			}
		}},
	}
	runDocumented(t, a, "### Removing the package", steps, strings.NewReplacer())

	// systemd's stop, from postrm
	must(t, syscall.Kill(pid, syscall.SIGTERM))
	waitExit(t, pid, 90*time.Second)
	for _, want := range [][]string{
		{`"message":"/usr/bin/gangtopo was removed (the package removed, or the file deleted): this daemon stops for good, after putting back what it holds in Slurm"`},
		{`"message":"release hold gangtopo_defrag_` + gang + ` of job ` + gang + `: ok (/usr/bin/gangtopo was removed (the package removed, or the file deleted))"`},
		{`"message":"stopped for good; nothing gangtopo held is left in Slurm"`},
	} {
		line := waitLogLine(t, log, time.Second, want...)
		t.Logf("the controller: %s", line)
	}
	if holds := gangtopoHolds(t); len(holds) != 0 {
		t.Errorf("holds left after the controller stopped for good: %v", holds)
	}
	audit, err := os.ReadFile(auditLog(snapshotFile))
	must(t, err)
	if _, ok := lineWith(string(audit), `"action":"release"`, `"gang":"`+gang+`"`, `"result":"ok"`, `was removed`); !ok {
		t.Errorf("no audit line for the hold's end:\n%s", audit)
	}
	nothingLost(t, gang, jobs)
	must(t, lab.RestartCtld(ctxT(t)))
	t.Logf("slurmctld restarted on its saved state (PID %d)", lab.CtldPID)
	nothingLost(t, gang, jobs)
}

// heldGang makes the fragmented cluster of the defrag tests, a waiting
// leaf gang, and a hold for it that `gangtopo defrag apply --wait 0`
// leaves to the controller; it waits for the gang to run inside the hold.
// It returns the gang and the other jobs by name.
func heldGang(t *testing.T, cfg string) (string, map[string]string) {
	t.Helper()
	jobs := fragmented(t)
	gang := pendingGang(t)
	out, code := defragCmd(t, "defrag", "apply", "--job", gang, "--yes", "--wait", "0", "--config", cfg, "--topology", clusterFile)
	if code != 0 || !strings.Contains(out, "requeued 1 job(s)") {
		t.Fatalf("defrag apply --yes --wait 0: exit %d\n%s", code, out)
	}
	g := waitRunning(t, gang, 60*time.Second)
	if holds := gangtopoHolds(t); len(holds) != 1 || nullable(g.Fields["Reservation"]) != holds[0] {
		t.Fatalf("gang %s runs in reservation %q, holds %v: want it inside its one hold", gang, g.Fields["Reservation"], holds)
	}
	t.Logf("gang %s runs on %v inside hold %s", gang, g.Nodes, g.Fields["Reservation"])
	return gang, jobs
}

// refusedRemoval: dpkg -r while slurm.conf and plugstack.conf load the
// plugins is refused, names both lines, and changes nothing.
func refusedRemoval(t *testing.T, a *adminHost, controller int) {
	t.Helper()
	out, err := a.run("dpkg -r gangtopo")
	conf, errConf := os.ReadFile(lab.Conf)
	must(t, errConf)
	n := slices.IndexFunc(strings.Split(string(conf), "\n"), func(l string) bool { return l == "JobSubmitPlugins=gangtopo" })
	for _, want := range []string{
		"gangtopo: not removed: Slurm is still configured to load the plugins this package holds:",
		"gangtopo:   " + lab.Conf + ":" + strconv.Itoa(n+1) + ": JobSubmitPlugins=gangtopo",
		"gangtopo:   " + lab.Path("etc", "plugstack.conf") + ":1: required " + slurmlab.StockPluginDir + "/spank_gangtopo.so nodefile_dir=",
		"GANGTOPO_FORCE_REMOVE=1",
	} {
		if err == nil || n < 0 || !strings.Contains(out, want) {
			t.Errorf("dpkg -r while Slurm loads the plugins: %v, want it refused saying %q", err, want)
		}
	}
	// (dpkg keeps the wish to remove it, "r", with the state installed, "i",
	// and no error flag)
	if st := a.must("dpkg-query -W -f '${db:Status-Abbrev}' gangtopo"); st != "ri " {
		t.Errorf("after the refusal the package is %q, want \"ri \" (installed)", st)
	}
	if _, err := os.Stat(filepath.Join(slurmRoot(), "usr/bin/gangtopo")); err != nil || !lab.Alive(controller) {
		t.Errorf("after the refusal: /usr/bin/gangtopo %v, controller alive %v; want both", err, lab.Alive(controller))
	}
	if t.Failed() {
		t.FailNow()
	}
}

// nothingLost checks that the gang runs outside any reservation and every
// other job is still queued (job b, requeued by the plan, pending or
// running again).
func nothingLost(t *testing.T, gang string, jobs map[string]string) {
	t.Helper()
	if !lab.CtldAlive() {
		t.Fatal("slurmctld is gone")
	}
	g, err := lab.ShowJob(ctxT(t), gang)
	if err != nil || g.State != "RUNNING" || nullable(g.Fields["Reservation"]) != "" || g.Fields["Restarts"] != "0" {
		t.Errorf("gang %s: %v %s, reservation %q, restarts %s; want RUNNING outside any reservation, never restarted",
			gang, err, g.State, g.Fields["Reservation"], g.Fields["Restarts"])
	}
	states := []string{"gang " + gang + " " + g.State}
	for _, name := range sortedNames(jobs) {
		j, err := lab.ShowJob(ctxT(t), jobs[name])
		if err != nil || (j.State != "RUNNING" && j.State != "PENDING") {
			t.Errorf("job %s (%s): %v %+v, want it still queued", name, jobs[name], err, j)
			continue
		}
		states = append(states, name+" "+jobs[name]+" "+j.State)
	}
	t.Logf("jobs: %s", strings.Join(states, ", "))
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
