package slurmlab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A lab on a newer Slurm series runs that series' own binaries from a
// Debian root (Options.Root; SLURM-LAB.md, "Newer series"), chrooted, in a
// mount namespace the lab holds open with one process of its own (the
// holder, a sleep): in it the root gets /proc, /dev and /sys, and the host
// paths every process must see at the same path inside (the temporary
// directory, which holds the lab directory and the tests' scratch files,
// and Options.Expose: the plugin builds) are bound into it. Daemons and
// client commands enter that namespace (nsenter) and chroot into the root;
// each slurmd makes a namespace of its own below it, as on the host, for
// its node-local directory. Nothing is mounted on the host: when the lab's
// last process ends, its namespace and every mount in it go with it, also
// after a crash.
//
// The client commands (sbatch, squeue, scontrol, ...) are reached through
// small scripts in <lab>/bin/slurm, first on the PATH of Lab.Env, so
// anything run with the lab's environment (the tests, `gangtopo snapshot
// --from-slurm`, the documented commands deploy_test runs) uses the
// series' own clients, as on a cluster of that release.

// clientCommands get a script each; slurmctld and slurmd too, for -V.
var clientCommands = []string{"sbatch", "srun", "salloc", "squeue", "scancel", "scontrol", "sinfo", "sacct",
	"sacctmgr", "sprio", "sshare", "sstat", "sdiag", "strigger", "sbcast", "sattach", "sreport"}

// holderName is the holder's name in run/pids.
const holderName = "rootns"

// rootScript mounts what the root needs inside the new namespace, says it
// is ready, and keeps the namespace open. $1 the root, $2 the ready file,
// then the host paths to expose. The host's /etc/hosts is bound over the
// root's: every daemon and srun of the lab names its host by the host's
// name, which the root's own file (localhost alone) does not resolve;
// slurmctld then retried the lookup for ten seconds, blocking, and a
// step's completion message sent meanwhile was lost (a job COMPLETING for
// over a minute on 24.11).
const rootScript = `set -e
r=$1; ready=$2; shift 2
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount --rbind /sys "$r/sys"
mount --bind /etc/hosts "$r/etc/hosts"
for p in "$@"; do mkdir -p "$r$p"; mount --bind "$p" "$r$p"; done
touch "$ready"
exec sleep 2147483647`

// startRoot starts the holder and writes the client scripts.
func (l *Lab) startRoot(ctx context.Context) error {
	root := l.opts.Root
	for _, f := range []string{"usr/sbin/slurmctld", "usr/sbin/slurmd", "usr/sbin/munged", "usr/bin/sbatch", "proc", "dev", "sys"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return fmt.Errorf("root %s is not a Slurm root (make roots builds them): %w", root, err)
		}
	}
	ready := l.Path("run", "root-ready")
	_ = os.Remove(ready)
	argv := append([]string{"/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", rootScript,
		"sh", root, ready}, l.exposed()...)
	pid, err := l.spawn(holderName, nil, argv...)
	if err != nil {
		return err
	}
	l.nsPID = pid
	// The holder execs twice (unshare, then sh, then sleep): while an exec
	// replaces it, /proc/PID/environ and cmdline can read empty, so
	// belongs() may say no for a live holder. Only its exit means the
	// mounts failed.
	if err := waitFor(ctx, 10*time.Second, "the root's mounts", func() bool {
		_, err := os.Stat(ready)
		return err == nil || !alive(pid)
	}); err != nil {
		return err
	}
	if _, err := os.Stat(ready); err != nil {
		how, _ := l.ended.Load(pid)
		return fmt.Errorf("mounting the root failed: its holder (PID %d) ended (%v): %s", pid, how, l.LogTail(holderName+".out", 5))
	}
	return l.writeClientScripts()
}

// exposed lists the host paths bound into the root at the same path:
// the temporary directory and Options.Expose, each once, outermost first
// (a path inside another exposed one is already there).
func (l *Lab) exposed() []string {
	paths := append([]string{os.TempDir()}, l.opts.Expose...)
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			paths[i] = filepath.Clean(abs)
		}
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) < len(paths[j]) })
	var out []string
	for _, p := range paths {
		if !l.isExposed(p, out) {
			out = append(out, p)
		}
	}
	return out
}

func (l *Lab) isExposed(p string, exposed []string) bool {
	for _, e := range exposed {
		if p == e || strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	return false
}

// checkExposed fails for a path a rooted lab's processes would not see.
func (l *Lab) checkExposed(p string) error {
	if l.opts.Root == "" || p == "" || l.isExposed(filepath.Clean(p), l.exposed()) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(l.opts.Root, p)); err == nil {
		return nil // the root's own (a package installed there)
	}
	return fmt.Errorf("%s is not visible inside the root %s: add it (or a directory above it) to Options.Expose", p, l.opts.Root)
}

// inRoot prefixes argv to run inside the lab's namespace and root; as is
// on the host. userspec ("uid:gid") runs it as that user.
func (l *Lab) inRoot(userspec string, argv ...string) []string {
	if l.opts.Root == "" {
		return argv
	}
	pre := append(l.nsenter(), "/usr/sbin/chroot")
	if userspec != "" {
		pre = append(pre, "--userspec="+userspec)
	}
	return append(append(pre, l.opts.Root), argv...)
}

// nsenter is the command prefix that enters a rooted lab's namespace.
func (l *Lab) nsenter() []string {
	return []string{"/usr/bin/nsenter", "--mount=/proc/" + strconv.Itoa(l.nsPID) + "/ns/mnt", "--"}
}

// clientDir holds the client scripts of a rooted lab.
func (l *Lab) clientDir() string { return l.Path("bin", "slurm") }

// clientScript runs one of the root's commands from the caller's working
// directory (as the same path inside; / when it is not there), with the
// scripts' directory taken off PATH: a job inherits sbatch's environment,
// and inside the root the scripts cannot work.
const clientScript = `#!/bin/sh
# written by tests/slurmlab: the %[1]s of Slurm in %[2]s, for the lab in %[3]s
PATH=$(printf '%%s' "$PATH" | sed 's#%[4]s:##g'); export PATH
exec %[5]s /bin/sh -c 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$(pwd)" %[6]s "$@"
`

func (l *Lab) writeClientScripts() error {
	if err := os.MkdirAll(l.clientDir(), 0o755); err != nil {
		return err
	}
	enter := strings.Join(l.inRoot(""), " ")
	cmds := map[string]string{"slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd"}
	for _, c := range clientCommands {
		cmds[c] = "/usr/bin/" + c
	}
	for name, bin := range cmds {
		text := fmt.Sprintf(clientScript, name, l.opts.Root, l.Dir, l.clientDir(), enter, bin)
		if err := os.WriteFile(filepath.Join(l.clientDir(), name), []byte(text), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// clientPath is the program Run starts for a Slurm command: its script
// in a rooted lab, the name (found on $PATH) otherwise.
func (l *Lab) clientPath(name string) string {
	if l.opts.Root == "" || strings.ContainsRune(name, '/') {
		return name
	}
	return filepath.Join(l.clientDir(), name)
}
