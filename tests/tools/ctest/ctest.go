// Package ctest builds c/tests/test_c.c, the test program of the plugins'
// pure-C parts, for Go tests that check the C and Go sides agree (the
// --gang-topology parser, the node file reader). One list of sources here,
// so that a new C file is added once.
package ctest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// Sources are test_c.c and the pure-C files it tests, relative to the
// repository root (the Makefile's c-test target builds the same).
var Sources = []string{"c/tests/test_c.c", "c/gangtopo_option.c", "c/gangtopo_nodefile.c", "c/gangtopo_scope.c", "c/gangtopo_quote.c"}

// Build compiles test_c into the test's temporary directory and returns
// its path. Without a C compiler the test skips (fails in CI).
func Build(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		needs.Skip(t, "no C compiler: the C/Go parity checks need cc")
	}
	root := Root()
	bin := filepath.Join(t.TempDir(), "test_c")
	args := []string{"-std=gnu11", "-Wall", "-Wextra", "-Werror", "-o", bin}
	for _, s := range Sources {
		args = append(args, filepath.Join(root, s))
	}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return bin
}

// Root is the repository root: three directories above this file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}
