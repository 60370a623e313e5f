package slurmstate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrUpdateTimeout marks an update that did not finish within its time:
// slurmctld is busy or down, and further updates would wait as long.
var ErrUpdateTimeout = errors.New("no answer in time")

// UpdateJob runs `scontrol update JobId=id args...` (each argument its own
// word, no shell), from binDir when set, killed with anything it started
// after timeout. The error names the command and carries scontrol's first
// line of output.
func UpdateJob(ctx context.Context, binDir string, timeout time.Duration, id string, args []string) error {
	_, err := Scontrol(ctx, binDir, timeout, append([]string{"update", "JobId=" + id}, args...)...)
	return err
}

// Scontrol runs `scontrol args...` (each argument its own word, no shell)
// from binDir when set, killed with anything it started after timeout, and
// returns what it printed. The error names the command (its first two
// words) and carries scontrol's first line of output; a command that ran
// out of time wraps ErrUpdateTimeout.
func Scontrol(ctx context.Context, binDir string, timeout time.Duration, args ...string) (string, error) {
	return Command(ctx, binDir, timeout, "scontrol", args...)
}

// Command runs the Slurm client command name (scontrol, sacctmgr) as
// Scontrol does.
func Command(ctx context.Context, binDir string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bin := name
	if binDir != "" {
		bin = filepath.Join(binDir, bin)
	}
	observeCommand(name, args)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := limitedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	label := name + " " + strings.Join(args[:min(len(args), 2)], " ")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return out.String(), fmt.Errorf("%s: %w within %s (slurmctld or slurmdbd busy or down?); killed", label, ErrUpdateTimeout, timeout)
	case err != nil:
		return out.String(), fmt.Errorf("%s: %w%s", label, err, firstLine(out.Bytes()))
	}
	return out.String(), nil
}
