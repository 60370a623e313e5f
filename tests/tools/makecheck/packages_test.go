package makecheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
	"github.com/gangtopo/gangtopo/tests/tools/ctest"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

func makefile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ctest.Root(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// makeVar is the value of a simple NAME = VALUE line of the Makefile.
func makeVar(t *testing.T, mk, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\??=\s*(.*)$`).FindStringSubmatch(mk)
	if m == nil {
		t.Fatalf("Makefile has no %s", name)
	}
	return strings.Fields(m[1])
}

// The Makefile installs what the lab's Go code would install by itself
// (tests/slurmlab), so that make packages leaves nothing for a test to
// install while others run.
func TestPackageListsAgree(t *testing.T) {
	mk := makefile(t)
	if diff := cmp.Diff(slurmlab.Packages, makeVar(t, mk, "SLURM_PACKAGES")); diff != "" {
		t.Errorf("SLURM_PACKAGES and slurmlab.Packages differ (-go +Makefile):\n%s", diff)
	}
	if diff := cmp.Diff(slurmlab.DBPackages, makeVar(t, mk, "DB_PACKAGES")); diff != "" {
		t.Errorf("DB_PACKAGES and slurmlab.DBPackages differ (-go +Makefile):\n%s", diff)
	}
}

// Only tests/tools/packages.sh runs apt-get: two apt-get at once fail on
// apt's lock, and the script installs under a lock of its own. (A fresh
// machine's make test failed when the two Debian roots, made in parallel,
// each installed debootstrap.)
func TestOnlyThePackagesScriptRunsAptGet(t *testing.T) {
	for i, line := range strings.Split(makefile(t), "\n") {
		if strings.HasPrefix(line, "\t") && strings.Contains(line, "apt-get") {
			t.Errorf("Makefile:%d runs apt-get itself: %s", i+1, strings.TrimSpace(line))
		}
	}
	out, code := runMake(t, "-n", "test")
	if code != 0 {
		t.Fatalf("make -n test: exit %d\n%s", code, out)
	}
	if !regexp.MustCompile(`-title "make test" packages lint `).MatchString(out) {
		t.Errorf("make test does not install its packages first:\n%s", out)
	}
}

// No Debian mirror is written into the repository: a site with its own
// mirror, or behind a proxy, reaches only the one its apt sources name.
func TestNoFixedDebianMirror(t *testing.T) {
	out, err := exec.Command("git", "-C", ctest.Root(), "grep", "-n", "-E", `https?://[a-z0-9.-]+/debian\b`).CombinedOutput()
	if err == nil {
		t.Errorf("the repository names a Debian mirror (take it from apt's sources: tests/tools/debian-mirror.sh):\n%s", out)
	}
}

// debian-mirror.sh prints a mirror this machine's apt sources name.
func TestDebianMirrorFromApt(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		needs.Skip(t, "no apt-get: not a Debian machine")
	}
	out, err := exec.Command(filepath.Join(ctest.Root(), "tests/tools/debian-mirror.sh")).Output()
	if err != nil {
		t.Fatal(err)
	}
	mirror := strings.TrimSpace(string(out))
	targets, err := exec.Command("apt-get", "indextargets", "--format", "$(REPO_URI)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if mirror == "" || !strings.Contains(string(targets), mirror+"/") {
		t.Errorf("debian-mirror.sh printed %q, not one of apt's sources:\n%s", mirror, targets)
	}
}
