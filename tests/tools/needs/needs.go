// Package needs is for tests that depend on something outside the
// checkout: ../shared's traces and reference data, a C compiler, root.
// On a developer's machine such a test skips, saying what is missing; in
// CI (CI=true, as .ci/run is run) every one of them is there by design, so
// the same absence fails the test instead of letting it check nothing.
package needs

import (
	"fmt"
	"os"
	"testing"
)

// Skip skips the test outside CI and fails it in CI, with the message.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: this must be present in CI)", msg)
		return
	}
	t.Skip(msg)
}

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }
