package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() {
	register("DebianPackageUnderSystemd", testDebianPackageUnderSystemd)
}

// fakeSystemctl stands in for systemd's systemctl in the root: it records
// each call, and whether /usr/bin/gangtopo was there at that moment, and
// succeeds. (deb-systemd-invoke hands stop and try-restart to systemctl
// as they are; deb-systemd-helper manages the unit links itself.)
const fakeSystemctl = `#!/bin/sh
if [ -e /usr/bin/gangtopo ]; then bin=binary; else bin=no-binary; fi
echo "systemctl $* ($bin)" >> /var/cache/gangtopo-e2e/systemctl.log
`

// testDebianPackageUnderSystemd runs the package's maintainer scripts as
// on a host where systemd runs: dpkg inside the root, in a mount namespace
// of its own in which /run/systemd/system exists and systemctl is
// fakeSystemctl (the lab has no systemd to run them under). What the
// scripts asked systemd, and the units' links deb-systemd-helper keeps,
// after each step:
//   - a fresh install reloads systemd and starts and enables nothing;
//   - the administrator enables the controller (systemd's own systemctl,
//     which works on the unit files without a running systemd);
//   - an upgrade reloads systemd, try-restarts the units (those that
//     run), and keeps the controller enabled;
//   - a removal stops the units after the binary is gone, masks them and
//     reloads systemd;
//   - a purge forgets the units: no link, no mask, no state left.
func testDebianPackageUnderSystemd(t *testing.T) {
	root := slurmRoot()
	if root == "" {
		t.Fatal("this test installs the package into the series' Debian root (make e2e E2E_SLURM=sid)")
	}
	release, err := labRelease()
	must(t, err)
	own, _ := packagesFor(t, release)
	next := nextPackage(t, release)
	cache := filepath.Join(root, "var/cache/gangtopo-e2e")
	must(t, os.MkdirAll(cache, 0o755))
	defer os.RemoveAll(cache)
	for _, p := range []string{own, next} {
		data, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(cache, filepath.Base(p)), data, 0o644))
	}
	must(t, os.WriteFile(filepath.Join(cache, "systemctl"), []byte(fakeSystemctl), 0o755))
	defer underSystemd(t, root, "GANGTOPO_FORCE_REMOVE=1 dpkg --purge gangtopo")

	units := "gangtopo-controller.service gangtopo-node.service"
	wants := "etc/systemd/system/multi-user.target.wants/gangtopo-controller.service"
	mask := "etc/systemd/system/gangtopo-controller.service"
	const unit = "/usr/lib/systemd/system/gangtopo-controller.service"
	steps := []struct {
		name, cmd string
		admin     bool // run as the administrator does, with systemd's own systemctl
		calls     []string
		says      string
		links     map[string]string // path in the root -> link target; "" absent
	}{
		{"fresh install", "dpkg -i /var/cache/gangtopo-e2e/" + filepath.Base(own), false,
			[]string{"systemctl --system daemon-reload (binary)"}, "gangtopo: installed; the daemons are not enabled",
			map[string]string{wants: "", mask: ""}},
		{"the administrator enables the controller", "systemctl enable gangtopo-controller.service", true, nil, "",
			map[string]string{wants: unit}},
		{"upgrade", "dpkg -i /var/cache/gangtopo-e2e/" + filepath.Base(next), false,
			[]string{"systemctl --system daemon-reload (binary)", "systemctl try-restart " + units + " (binary)"},
			"gangtopo: restarting those of " + units + " that run, on the new version",
			map[string]string{wants: unit, mask: ""}},
		{"remove", "dpkg -r gangtopo", false,
			[]string{"systemctl stop " + units + " (no-binary)", "systemctl --system daemon-reload (no-binary)"},
			"gangtopo: stopping " + units + " (a controller first puts back what it holds in Slurm)",
			map[string]string{mask: "/dev/null"}},
		{"purge", "dpkg --purge gangtopo", false, []string{"systemctl --system daemon-reload (no-binary)"}, "",
			map[string]string{wants: "", mask: ""}},
	}
	log := filepath.Join(cache, "systemctl.log")
	for _, s := range steps {
		_ = os.Remove(log)
		var out string
		if s.admin {
			c := exec.Command("/usr/sbin/chroot", root, "/bin/sh", "-c", s.cmd)
			data, err := c.CombinedOutput()
			t.Logf("$ %s  (exit: %v)\n%s", s.cmd, err, data)
			must(t, err)
		} else {
			out = underSystemd(t, root, s.cmd)
		}
		if !strings.Contains(out, s.says) {
			t.Errorf("%s: %s does not say %q", s.name, s.cmd, s.says)
		}
		data, _ := os.ReadFile(log)
		var calls []string
		for _, c := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			// deb-systemd-helper's own reload after each link it changes
			// (plain daemon-reload); the scripts' say --system
			if c != "" && !strings.HasPrefix(c, "systemctl daemon-reload ") {
				calls = append(calls, c)
			}
		}
		if diff := cmp.Diff(s.calls, calls); diff != "" {
			t.Errorf("%s: systemctl calls (-want +got):\n%s", s.name, diff)
		}
		for path, want := range s.links {
			got, _ := os.Readlink(filepath.Join(root, path))
			if got != want {
				t.Errorf("%s: /%s links to %q, want %q", s.name, path, got, want)
			}
		}
	}
	state, _ := filepath.Glob(filepath.Join(root, "var/lib/systemd/deb-systemd-helper-*/*gangtopo*"))
	if len(state) != 0 {
		t.Errorf("deb-systemd-helper's state left after the purge: %v", state)
	}
}

// underSystemd runs cmd with sh inside the root as if systemd ran there
// (see fakeSystemctl), in a mount namespace that ends with it, and returns
// its output.
func underSystemd(t *testing.T, root, cmd string) string {
	t.Helper()
	script := `set -e
r=$1; shift
mount -t tmpfs tmpfs "$r/run"
mkdir -p "$r/run/systemd/system"
mount --bind "$r/var/cache/gangtopo-e2e/systemctl" "$r/usr/bin/systemctl"
exec /usr/sbin/chroot "$r" /bin/sh -c "$*"`
	c := exec.Command("/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", root, cmd)
	c.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := c.CombinedOutput()
	t.Logf("$ %s  (exit: %v)\n%s", cmd, err, out)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(out)
}
