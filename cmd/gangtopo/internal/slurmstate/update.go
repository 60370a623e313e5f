package slurmstate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bin := "scontrol"
	if binDir != "" {
		bin = filepath.Join(binDir, bin)
	}
	argv := append([]string{"update", "JobId=" + id}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := limitedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	name := "scontrol update JobId=" + id
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Errorf("%s: %w within %s (slurmctld busy or down?); killed", name, ErrUpdateTimeout, timeout)
	case err != nil:
		return fmt.Errorf("%s: %w%s", name, err, firstLine(out.Bytes()))
	}
	return nil
}
