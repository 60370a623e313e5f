package makecheck

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/ctest"
	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// make runs make in the repository root with CI unset and returns its
// output and exit code.
func runMake(t *testing.T, args ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		needs.Skip(t, "no make: %v", err)
	}
	cmd := exec.Command("make", append([]string{"-s", "--no-print-directory", "-C", ctest.Root()}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("make %v: %v", args, err)
	return "", 0
}

// For a user who is not root the end-to-end suite cannot run; `make test`
// must then fail, saying so, and not print a note and succeed (which reads
// as a pass on a developer's machine, CI or not).
func TestE2EWithoutRootIsNotAPass(t *testing.T) {
	out, code := runMake(t, "e2e", "E2E_UID=1000")
	if code == 0 {
		t.Fatalf("make e2e as uid 1000 exited 0:\n%s", out)
	}
	for _, want := range []string{"e2e: NOT RUN", "This is not a pass", "make test-partial"} {
		if !strings.Contains(out, want) {
			t.Errorf("make e2e as uid 1000 says\n%s\nwant %q in it", out, want)
		}
	}
	// and says so last (before make's own "*** Error" line), naming the step
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if strings.HasPrefix(last, "make: ***") && len(lines) > 1 {
		last = lines[len(lines)-2]
	}
	if !strings.HasPrefix(last, "make e2e: FAILED in e2e-check: e2e: NOT RUN") {
		t.Errorf("make e2e as uid 1000 ends with %q, want the step and the reason", last)
	}
}

// make test-partial runs the parts that need no root and ends saying the
// result is partial.
func TestTestPartialSaysSo(t *testing.T) {
	out, code := runMake(t, "-n", "test-partial")
	if code != 0 {
		t.Fatalf("make -n test-partial: exit %d\n%s", code, out)
	}
	for _, want := range []string{"go test ./...", "go vet ./...", "test_c", "PARTIAL", "e2e was NOT run"} {
		if !strings.Contains(out, want) {
			t.Errorf("make -n test-partial does not run or say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "GANGTOPO_E2E=1") {
		t.Errorf("make -n test-partial runs the e2e suite:\n%s", out)
	}
}
