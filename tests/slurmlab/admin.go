package slurmlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// What an administrator does on a cluster's hosts besides running Slurm's
// clients: install packages into the root (dpkg) and run what they
// installed, start a daemon of their own beside Slurm, restart slurmctld.
// The package tests (tests/e2e/package_*_test.go) do it through these.

// rootPath is the PATH inside a root: its own programs only (the client
// scripts, which the temporary directory makes visible there, work only
// outside).
const rootPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// rootScript runs a program of the root from the caller's working
// directory (as the same path inside; / when it is not there), with the
// root's own PATH.
const rootCommandScript = `#!/bin/sh
# written by tests/slurmlab: %[1]s in %[2]s, for the lab in %[3]s
%[4]s; export PATH
exec %[5]s /bin/sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$(pwd)" %[1]s "$@"
`

// RootCommand writes dir/name, a script that runs path inside the lab's
// root as the client scripts do, for a shell on the host to find on its
// PATH (dpkg, an installed /usr/bin/gangtopo). A lab on the host's own
// Slurm has no root: the script runs path on the host.
func (l *Lab) RootCommand(dir, name, path string) error {
	text := fmt.Sprintf(rootCommandScript, path, l.opts.Root, l.Dir, rootPath, strings.Join(l.inRoot(""), " "))
	return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755)
}

// StartInRoot starts argv inside the lab's root (on the host for a lab
// without one) as one of the lab's daemons: the lab's environment with
// the root's PATH and env added, output to log/<name>.out, stopped by
// Stop. It returns the daemon's PID (nsenter and chroot exec, so it is the
// program's own).
func (l *Lab) StartInRoot(name string, env []string, argv ...string) (int, error) {
	return l.spawn(name, env, l.inRoot("", argv...)...)
}

// Alive says whether a process the lab started still runs.
func (l *Lab) Alive(pid int) bool { return belongs(pid, l.Dir) }

// RestartCtld stops slurmctld (SIGTERM: it saves its state) and starts it
// again on that state, as `systemctl restart slurmctld` does on a site:
// the jobs are recovered, those running keep running on their nodes. It
// waits until slurmctld answers and every node has registered again
// (none down or not responding).
func (l *Lab) RestartCtld(ctx context.Context) error {
	stopPIDs([]int{l.CtldPID}, l.Dir, StopGrace)
	pid, err := l.spawn("slurmctld", l.opts.Plugins.CtldEnv, l.inRoot("", l.Path("bin", "slurmctld"), "-D", "-f", l.Conf)...)
	if err != nil {
		return err
	}
	l.CtldPID = pid
	return waitFor(ctx, 60*time.Second, "slurmctld and every slurmd after the restart", func() bool {
		if l.ctldGone() {
			return true // fail fast below
		}
		state, _, err := l.nodeStates(ctx, 5*time.Second)
		if err != nil || len(state) == 0 {
			return false
		}
		for _, st := range state {
			if !answering(st) || strings.HasPrefix(st, "down") {
				return false
			}
		}
		return true
	}, func() error {
		if l.ctldGone() {
			return errors.New("slurmctld exited at its restart: " + l.LogTail("slurmctld.log", 5))
		}
		return nil
	})
}
