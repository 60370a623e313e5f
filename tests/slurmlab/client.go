package slurmlab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// DefaultTimeout bounds one client command. While slurmctld is down every
// client retries for about 10 s (SLURM-LAB.md), so no call is unbounded.
const DefaultTimeout = 15 * time.Second

// Run runs a Slurm client command (sbatch, squeue, scontrol, ...) against
// the lab with a timeout and returns its standard output. A non-zero exit
// is an error carrying stderr.
func (l *Lab) Run(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	out, errOut, err := l.RunSplit(ctx, timeout, nil, name, args...)
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errOut))
	}
	return out, nil
}

// RunSplit is Run with extra environment, returning stdout and stderr
// apart and the exit error as is.
func (l *Lab) RunSplit(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) (string, string, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.clientPath(name), args...)
	cmd.Env = append(l.Env(), env...)
	cmd.Dir = l.Path("state")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("timed out after %v", timeout)
	}
	return stdout.String(), stderr.String(), err
}

// LogTail returns the last n lines of a file under log/.
func (l *Lab) LogTail(name string, n int) string {
	data, err := os.ReadFile(l.Path("log", name))
	if err != nil {
		return err.Error()
	}
	return tail(string(data), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RunAs is Run as another user (uid and gid), for what slurmctld treats
// differently from root's commands: a user's own scontrol update, say.
func (l *Lab) RunAs(ctx context.Context, uid, gid uint32, name string, args ...string) (string, error) {
	if l.closed != "" {
		return "", fmt.Errorf("%s %s as uid %d: %s", name, strings.Join(args, " "), uid, l.closed)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if l.opts.Root == "" {
		cmd = exec.CommandContext(ctx, name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	} else {
		// only root may enter the namespace: chroot drops to the user
		argv := l.inRoot(fmt.Sprintf("%d:%d", uid, gid), append([]string{"/usr/bin/" + name}, args...)...)
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	cmd.Env = l.Env()
	cmd.Dir = "/"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s as uid %d: %w: %s", name, strings.Join(args, " "), uid, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
