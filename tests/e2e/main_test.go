// Package e2e drives a real Slurm 22.05 cluster (tests/slurmlab) with the
// gangtopo plugins loaded and asserts what Slurm did. It runs only when
// GANGTOPO_E2E=1 (make e2e sets it) and then needs root; under CI=true it
// must run and fails instead of skipping.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// lab is the cluster shared by every test of the package.
var lab *slurmlab.Lab

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("GANGTOPO_E2E") != "1" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "e2e: CI=true but GANGTOPO_E2E is not 1: run `make e2e` (make test does)")
			return 1
		}
		fmt.Println("e2e: skipped (set GANGTOPO_E2E=1 or run `make e2e`; needs root)")
		return 0
	}
	t0 := time.Now()
	l, err := startLab()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	lab = l
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: slurmctld log tail:\n%s\n", lab.LogTail("slurmctld.log", 40))
	}
	if err := lab.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	fmt.Printf("e2e: wall time %v\n", time.Since(t0).Round(time.Millisecond))
	return code
}

func startLab() (*slurmlab.Lab, error) {
	const file = "../../docs/examples/lab16.yaml"
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := topology.Parse(f, file)
	if err != nil {
		return nil, err
	}
	return slurmlab.Start(context.Background(), slurmlab.Options{
		Cluster: c, ClusterFile: file, Owner: os.Getpid(),
		Logf: func(format string, args ...any) { fmt.Printf(format+"\n", args...) },
	})
}
