package slurmlab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startMunge makes a private key and starts munged on a private socket, so
// nothing collides with a packaged munged (SLURM-LAB.md).
func (l *Lab) startMunge(ctx context.Context) error {
	key := l.Path("munge", "key", "munge.key")
	if _, err := os.Stat(key); err != nil {
		argv := l.inRoot("", "/usr/sbin/mungekey", "--create", "--keyfile="+key)
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("mungekey: %v: %s", err, out)
		}
	}
	sock := l.mungeSocket()
	_, err := l.spawn("munged", nil, l.inRoot("", "/usr/sbin/munged", "-F", "--socket="+sock, "--key-file="+key,
		"--pid-file="+l.Path("munge", "munged.pid"), "--log-file="+l.Path("log", "munged.log"),
		"--seed-file="+l.Path("munge", "munged.seed"))...)
	if err != nil {
		return err
	}
	return waitFor(ctx, 10*time.Second, "munged socket", func() bool {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode()&os.ModeSocket != 0
	})
}

func (l *Lab) mungeSocket() string { return l.Path("munge", "munge.socket.2") }

// startCtld starts slurmctld in the foreground (-D) with a cleared state
// (-c): state saved by an earlier run would otherwise come back.
func (l *Lab) startCtld(ctx context.Context) error {
	pid, err := l.spawn("slurmctld", l.opts.Plugins.CtldEnv, l.inRoot("", l.Path("bin", "slurmctld"), "-D", "-c", "-f", l.Conf)...)
	if err != nil {
		return err
	}
	l.CtldPID = pid
	return waitFor(ctx, 20*time.Second, "slurmctld to answer", func() bool {
		if l.ctldGone() {
			return true // fail fast below
		}
		_, err := l.Run(ctx, 5*time.Second, "scontrol", "ping")
		return err == nil
	}, func() error {
		if l.ctldGone() {
			return fmt.Errorf("slurmctld exited at start: %s", l.LogTail("slurmctld.log", 5))
		}
		return nil
	})
}

// startNodes starts one slurmd per node (-N name; the normal slurmd
// accepts it) and waits until every node is idle. Each slurmd runs in a
// mount namespace of its own (unshare, as root) in which its node-local
// directory is bound over <lab>/nodes, so that the node file directory is
// node-local as on a real cluster, with one plugstack.conf for all.
func (l *Lab) startNodes(ctx context.Context) error {
	batch := l.StartBatch()
	for i := range l.Cluster.Nodes {
		if err := l.startNode(i); err != nil {
			return err
		}
		if n := i + 1; n%batch == 0 && n < len(l.Cluster.Nodes) {
			// a batch started: let it register before the next (scale.go)
			if err := l.waitRegistered(ctx, n); err != nil {
				return err
			}
			l.opts.Logf("slurmlab: %d of %d nodes registered", n, len(l.Cluster.Nodes))
		}
	}
	return l.waitNodesStarted(ctx)
}

// startNode starts node i's slurmd.
func (l *Lab) startNode(i int) error {
	name := l.Cluster.Nodes[i].Name
	daemon := []string{l.Path("bin", "slurmd"), "-D", "-N", name, "-f", l.Conf, "-d", l.Path("bin", "slurmstepd")}
	mountNS := []string{"/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$1" "$2" && shift 2 && exec "$@"`, "sh", l.NodeFileDir(name)}
	argv := append(append(mountNS, l.Path("nodes")), daemon...)
	if root := l.opts.Root; root != "" {
		// enter the lab's namespace, mount at the path as seen from
		// outside the root, then chroot (root.go)
		argv = append(append(append(l.nsenter(), mountNS...), root+l.Path("nodes"), "/usr/sbin/chroot", root), daemon...)
	}
	_, err := l.spawn("slurmd-"+name, nil, argv...)
	return err
}

// waitNodesStarted waits until every node is idle. A slurmd whose first
// registration was lost is asked again only at slurmctld's next ping,
// every SlurmdTimeout/3 (100 s in the lab), past the wait on a machine
// busy with other labs (seen at 128 nodes). So the nodes
// still unknown halfway through the wait get their slurmd started again,
// which registers at start.
func (l *Lab) waitNodesStarted(ctx context.Context) error {
	limit := registerWait(len(l.Cluster.Nodes))
	if err := l.WaitNodesIdle(ctx, limit/2); err == nil || ctx.Err() != nil {
		return err
	}
	state, _, err := l.nodeStates(ctx, 30*time.Second)
	if err != nil {
		return l.WaitNodesIdle(ctx, limit)
	}
	var again []string
	for i := range l.Cluster.Nodes {
		if name := l.Cluster.Nodes[i].Name; strings.HasPrefix(state[name], "unk") {
			if err := l.restartNode(i); err != nil {
				return err
			}
			again = append(again, name)
		}
	}
	if len(again) > 0 {
		l.opts.Logf("slurmlab: %d nodes had not registered after %v; their slurmd started again: %s", len(again), limit/2, strings.Join(again, ","))
	}
	return l.WaitNodesIdle(ctx, limit)
}

// restartNode stops node i's slurmd and starts it again.
func (l *Lab) restartNode(i int) error {
	name := "slurmd-" + l.Cluster.Nodes[i].Name
	kept := l.procs[:0]
	for _, p := range l.procs {
		if p.Name == name {
			stopPIDs([]int{p.PID}, l.Dir, StopGrace)
			continue
		}
		kept = append(kept, p)
	}
	l.procs = kept
	return l.startNode(i)
}

// WaitNodesIdle waits until sinfo reports every node idle.
func (l *Lab) WaitNodesIdle(ctx context.Context, limit time.Duration) error {
	var last string
	err := waitFor(ctx, limit, "all nodes idle", func() bool {
		state, out, err := l.nodeStates(ctx, 5*time.Second)
		if err != nil {
			last = err.Error()
			return false
		}
		last = out
		if len(state) != len(l.Cluster.Nodes) {
			return false
		}
		for _, st := range state {
			if !idle(st) {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("%w; last sinfo: %s", err, strings.Join(strings.Fields(last), " "))
	}
	return nil
}

// nodeStates reads each node's state as sinfo abbreviates it (idle, mix,
// unk*, ...) and what sinfo printed. sinfo prints a line per node and
// partition: a node in two partitions is listed twice, and held once.
func (l *Lab) nodeStates(ctx context.Context, timeout time.Duration) (map[string]string, string, error) {
	out, err := l.Run(ctx, timeout, "sinfo", "-h", "-N", "-o", "%N %t")
	if err != nil {
		return nil, "", err
	}
	state := map[string]string{}
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i += 2 {
		state[f[i]] = f[i+1]
	}
	return state, out, nil
}

// idle says whether a node's state is idle. plnd is idle too, with
// backfill's mark for a job it planned to start there (a heterogeneous
// job, say), which stays until its next pass (bf_interval, 30 s) even when
// the job is gone.
func idle(state string) bool { return state == "idle" || state == "plnd" }

// answering says whether slurmctld hears from a node's slurmd: its state
// is neither unknown nor not responding (a * after it).
func answering(state string) bool {
	return !strings.HasPrefix(state, "unk") && !strings.HasSuffix(state, "*")
}

// CtldAlive reports whether the slurmctld this lab started still runs
// (checked by PID and marker, never by name).
func (l *Lab) CtldAlive() bool { return l.CtldPID > 0 && belongs(l.CtldPID, l.Dir) }

// ctldGone says slurmctld's process has exited. Not !CtldAlive: while a
// rooted lab's nsenter execs chroot and chroot execs slurmctld, /proc/PID
// can read empty for a moment, and a loaded machine saw a lab fail to start
// with "slurmctld exited at start" (its log then said only that the lab's
// SIGTERM stopped it).
func (l *Lab) ctldGone() bool {
	return l.CtldPID <= 0 || syscall.Kill(l.CtldPID, 0) == syscall.ESRCH || isZombie(l.CtldPID)
}

// Stop tears the lab down by PID (see StopDir) and removes its directory if
// Start made it. It is safe to call twice and on a half-started lab.
func (l *Lab) Stop() error {
	if l == nil || l.Dir == "" {
		return nil
	}
	err := StopDir(l.Dir)
	if err == nil && l.tempDir {
		err = os.RemoveAll(l.Dir)
	}
	l.procs = nil
	if l.releasePorts != nil {
		l.releasePorts()
		l.releasePorts = nil
	}
	return err
}

// Restart stops slurmctld by PID and starts it again with the same
// configuration and a fresh state: how the e2e tests reload plugins.
func (l *Lab) Restart(ctx context.Context, plugins Plugins) error {
	_, _ = l.Run(ctx, 5*time.Second, "scancel", "--quiet", "--full", "-u", "root")
	stopPIDs([]int{l.CtldPID}, l.Dir, StopGrace)
	l.opts.Plugins = plugins
	if err := l.writeConfig(); err != nil {
		return err
	}
	if err := l.startCtld(ctx); err != nil {
		return err
	}
	return l.WaitNodesIdle(ctx, 30*time.Second)
}

// SetPlugins rewrites the configuration for other plugins without telling
// slurmctld: the caller runs `scontrol reconfigure` itself (the documented
// way to switch gangtopo on or off).
func (l *Lab) SetPlugins(plugins Plugins) error {
	l.opts.Plugins = plugins
	return l.writeConfig()
}

// Reconfigure rewrites the configuration for other plugins and runs
// `scontrol reconfigure` (0.2 s, where Restart takes seconds). slurmctld
// loads or drops job_submit/gangtopo when JobSubmitPlugins changes; the
// plugin directory and slurmctld's environment stay as they were, so a
// different plugin build needs Restart.
func (l *Lab) Reconfigure(ctx context.Context, plugins Plugins) error {
	l.opts.Plugins = plugins
	if err := l.writeConfig(); err != nil {
		return err
	}
	before := l.pidFileTime()
	answered := l.AnsweringNodes(ctx)
	if _, err := l.Run(ctx, DefaultTimeout, "scontrol", "reconfigure"); err != nil {
		return err
	}
	if err := l.followCtld(ctx, before); err != nil {
		return err
	}
	return l.WaitAnswering(ctx, answered)
}

// AnsweringNodes are the nodes whose slurmd slurmctld hears from (none
// when sinfo fails).
func (l *Lab) AnsweringNodes(ctx context.Context) map[string]bool {
	state, _, err := l.nodeStates(ctx, 5*time.Second)
	if err != nil {
		return nil
	}
	nodes := map[string]bool{}
	for n, st := range state {
		if answering(st) {
			nodes[n] = true
		}
	}
	return nodes
}

// WaitAnswering waits, from 23.11 on, until every node of want answers
// the reconfigured slurmctld again. Its new process knows the nodes as
// unknown until their slurmd registers (for about half a second on
// 26.05.5): a job asked about then is told it starts later, or refused.
func (l *Lab) WaitAnswering(ctx context.Context, want map[string]bool) error {
	if !l.Release.AtLeast(23, 11) || len(want) == 0 {
		return nil
	}
	// 26.05.5 at 1,024 nodes on 2 busy CPUs took longer than 30 s: the
	// wait grows with the nodes, as their registration does
	limit := 30*time.Second + time.Duration(len(want))*100*time.Millisecond
	return waitFor(ctx, limit, "the nodes to register with the reconfigured slurmctld", func() bool {
		now := l.AnsweringNodes(ctx)
		for n := range want {
			if !now[n] {
				return false
			}
		}
		return true
	})
}

// pidFileTime is when slurmctld last wrote its PID file (zero when none).
func (l *Lab) pidFileTime() time.Time {
	fi, err := os.Stat(l.Path("run", "slurmctld.pid"))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// followCtld finds slurmctld again after a reconfigure: from 23.11 on,
// `scontrol reconfigure` makes slurmctld start itself again
// (src/slurmctld/controller.c, _try_to_reconfig). A daemonized slurmctld
// forks a new process and the old one exits; one in the foreground, as
// the lab runs it (-D), executes itself in place on 24.11 and keeps its
// PID. Either way the new program writes its PID file again, so the wait
// is for a PID file written after before (the file's time when the
// reconfigure was asked for) that names one of the lab's live processes,
// and CtldPID becomes that PID.
func (l *Lab) followCtld(ctx context.Context, before time.Time) error {
	if !l.Release.AtLeast(23, 11) {
		return nil
	}
	old, seen := l.CtldPID, "no PID file"
	err := waitFor(ctx, 20*time.Second, "the reconfigured slurmctld's PID file", func() bool {
		written := l.pidFileTime()
		data, err := os.ReadFile(l.Path("run", "slurmctld.pid"))
		if err != nil {
			return false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		seen = fmt.Sprintf("PID file %q written %s (before the reconfigure: %s), slurmctld was PID %d",
			strings.TrimSpace(string(data)), written.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), old)
		if err != nil || (pid == old && !written.After(before)) || !belongs(pid, l.Dir) {
			return false
		}
		l.CtldPID = pid
		for i := range l.procs {
			if l.procs[i].Name == "slurmctld" {
				l.procs[i].PID = pid
			}
		}
		return l.writePIDs() == nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s", err, seen)
	}
	return nil
}

// waitFor polls cond every 100 ms until it holds, then runs the optional
// checks (which may turn success into an error).
func waitFor(ctx context.Context, limit time.Duration, what string, cond func() bool, checks ...func() error) error {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			for _, c := range checks {
				if err := c(); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", limit, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
