package actuate

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// Leader says whether this process may change Slurm now, and why not.
type Leader interface {
	Lead(ctx context.Context) (ok bool, why string)
}

// Always leads: a command an administrator runs by hand acts as that
// administrator (Slurm checks the authority of each command).
type Always struct{}

// Lead always says yes.
func (Always) Lead(context.Context) (bool, string) { return true, "" }

// Never leads: a controller that only publishes snapshots.
type Never struct{}

// Lead always says no.
func (Never) Lead(context.Context) (bool, string) {
	return false, "actions.leader is never: this controller publishes snapshots only"
}

// SlurmPrimary leads while the slurmctld in control runs on this host:
// slurm.conf lists the controllers in order (SlurmctldHost), the first
// that answers is the one in control (a backup takes over only while the
// ones before it are down, and hands back when they return), and
// `scontrol ping` says which answer. Its lines are Slurm's own
// ("Slurmctld(primary) at ctl1 is UP"): no user can shape them.
type SlurmPrimary struct {
	// Host is this host's name as SlurmctldHost names it.
	Host string
	// Ping runs `scontrol ping` and returns what it printed; an error with
	// output (every controller down: exit status 1) still has its lines.
	Ping func(ctx context.Context) (string, error)
	// Local says whether a host name is this host's by its addresses (nil:
	// LocalHost), for a SlurmctldHost written as another name of this
	// host (localhost on a one-host cluster, an alias).
	Local func(ctx context.Context, host string) bool
}

// Lead asks Slurm which controller is in control.
func (l SlurmPrimary) Lead(ctx context.Context) (bool, string) {
	out, err := l.Ping(ctx)
	host, found := InControl(out)
	switch {
	case !found && err != nil:
		return false, fmt.Sprintf("scontrol ping failed (%v): which controller is in control is not known", err)
	case !found:
		return false, "scontrol ping: no slurmctld answers"
	case !SameHost(host, l.Host) && !l.local(ctx, host):
		return false, fmt.Sprintf("the slurmctld in control runs on %s, not here (%s): this controller publishes snapshots only", host, l.Host)
	}
	return true, ""
}

func (l SlurmPrimary) local(ctx context.Context, host string) bool {
	if l.Local != nil {
		return l.Local(ctx, host)
	}
	return LocalHost(ctx, host)
}

// LocalHost says whether host resolves to an address of one of this
// host's interfaces (looked up within 2 s; a failed lookup says no).
func LocalHost(ctx context.Context, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ip := range ips {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip.IP) {
				return true
			}
		}
	}
	return false
}

// InControl reads `scontrol ping`: the host of the first controller that
// is UP, in slurm.conf's order.
func InControl(ping string) (host string, found bool) {
	for _, line := range strings.Split(ping, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Slurmctld(")
		if !ok {
			continue
		}
		_, rest, ok = strings.Cut(rest, ") at ")
		if !ok {
			continue
		}
		h, state, ok := strings.Cut(rest, " is ")
		if ok && state == "UP" && h != "" {
			return h, true
		}
	}
	return "", false
}

// SameHost compares host names as Slurm does for SlurmctldHost: the short
// name (up to the first dot), case-insensitively.
func SameHost(a, b string) bool {
	short := func(s string) string { h, _, _ := strings.Cut(strings.ToLower(s), "."); return h }
	return a != "" && short(a) == short(b)
}

// ProcessLock leads while it holds an exclusive lock on a file, so that
// two controllers started on one host (two units, a unit and a hand-run
// daemon) do not both act; it is given up only when the process ends, and
// the kernel drops it then, however the process ends. Next is asked while
// the lock is held.
type ProcessLock struct {
	Path string
	Next Leader
	f    *os.File
}

// Lead tries the lock (without waiting) until it holds it.
func (l *ProcessLock) Lead(ctx context.Context) (bool, string) {
	if l.f == nil {
		f, err := os.OpenFile(l.Path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
		if err != nil {
			return false, fmt.Sprintf("the controller lock %s: %v", l.Path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return false, fmt.Sprintf("another controller on this host holds %s: this one publishes snapshots only", l.Path)
		}
		l.f = f
		f.Truncate(0)
		fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	if l.Next == nil {
		return true, ""
	}
	return l.Next.Lead(ctx)
}
