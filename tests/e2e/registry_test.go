package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// e2eTest is one end-to-end test: a function run against the package's
// lab, under TestE2E.
type e2eTest struct {
	name string
	fn   func(*testing.T)
}

// registry holds every end-to-end test in registration order (each file's
// init, files in name order: the order `go test` ran them as top-level
// tests before).
var registry []e2eTest

// register adds a test to the suite. Each file registers its own tests, so
// a test added in one file touches no other.
func register(name string, fn func(*testing.T)) {
	for _, r := range registry {
		if r.name == name {
			panic("e2e: test " + name + " registered twice")
		}
	}
	registry = append(registry, e2eTest{name, fn})
}

// TestE2E runs the whole suite against the lab, one subtest per test under
// the Slurm release the lab runs: TestE2E/slurm-24.11.5/GangStaysInOneLeaf.
// make e2e runs this package once per Slurm series (E2E_SLURM), so every
// test's name says which series it ran on; -run 'TestE2E/slurm-.*/Gang'
// picks tests on every series.
func TestE2E(t *testing.T) {
	release, err := labRelease()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("slurm-"+release, func(t *testing.T) {
		for _, r := range registry {
			t.Run(r.name, r.fn)
		}
	})
}

// labRelease asks the lab's own Slurm which release it is ("22.05.8").
func labRelease() (string, error) {
	out, err := lab.Run(context.Background(), 0, "scontrol", "--version")
	if err != nil {
		return "", err
	}
	f := strings.Fields(out) // "slurm 22.05.8" (or "slurm-wlm 22.05.8")
	if len(f) != 2 {
		return "", fmt.Errorf("scontrol --version printed %q, want \"slurm RELEASE\"", out)
	}
	return f[1], nil
}
