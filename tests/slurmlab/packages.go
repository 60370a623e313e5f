package slurmlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Packages are the Debian packages a lab needs. slurm-wlm-emulator is
// deliberately absent: it refuses a normal configuration and silently
// switches the daemon alternatives to itself (SLURM-LAB.md).
var Packages = []string{"slurmctld", "slurmd", "slurm-client", "libslurm-dev", "munge", "gcc", "libc6-dev"}

// needed are files whose absence means the packages are missing.
var needed = []string{sbinCtld, sbinD, sbinStepd, "/usr/bin/sbatch", "/usr/sbin/munged", "/usr/sbin/mungekey",
	"/usr/include/slurm/slurm.h", "/usr/include/slurm/spank.h"}

// EnsurePackages installs the Slurm packages with apt-get when any of their
// files is missing (about 30 s on a fresh machine), and does nothing
// otherwise.
func EnsurePackages(ctx context.Context, logf func(string, ...any)) error {
	return ensure(ctx, logf, needed, Packages)
}

// ensure installs pkgs with apt-get when any file of files is missing.
// Services the packages bring are never started: while apt-get runs, a
// policy-rc.d that refuses every start is in place (unless the machine
// has one already), so installing MariaDB starts no system database.
func ensure(ctx context.Context, logf func(string, ...any), files, pkgs []string) error {
	missing := ""
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing = f
			break
		}
	}
	if missing == "" {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("slurmlab: %s is missing and apt-get is not available: install %v", missing, pkgs)
	}
	logf("slurmlab: %s missing; installing %v with apt-get", missing, pkgs)
	if _, err := os.Stat(policyRcD); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(policyRcD, []byte("#!/bin/sh\n# written by gangtopo's tests/slurmlab while apt-get runs: start no service\nexit 101\n"), 0o755); err != nil {
			return fmt.Errorf("slurmlab: %w", err)
		}
		defer os.Remove(policyRcD)
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	steps := [][]string{{"apt-get", "update", "-qq"},
		append([]string{"apt-get", "install", "-y", "-qq", "--no-install-recommends"}, pkgs...)}
	for _, argv := range steps {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("slurmlab: %v: %v\n%s", argv, err, tail(string(out), 20))
		}
	}
	return nil
}

// policyRcD is Debian's hook that invoke-rc.d asks before starting a
// service (exit 101: do not).
const policyRcD = "/usr/sbin/policy-rc.d"
