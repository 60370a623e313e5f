package slurmlab

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A lab runs one Slurm release series: the host's own packages (Debian
// bookworm: 22.05.8), or the packages of a newer Debian suite installed in a
// root of their own (trixie: 24.11.5, sid: 26.05.5; make roots builds them
// with debootstrap under build/roots). What the lab writes differs by
// release where Slurm does (slurmconf.go asks Release.AtLeast); everything
// else is the same lab.

// HostSeries names the host's own Slurm packages.
const HostSeries = "host"

// Release is a Slurm release, "24.11.5".
type Release struct {
	Major, Minor, Micro int
}

// ParseRelease reads "24.11.5".
func ParseRelease(s string) (Release, error) {
	f := strings.Split(strings.TrimSpace(s), ".")
	if len(f) != 3 {
		return Release{}, fmt.Errorf("slurmlab: release %q: want MAJOR.MINOR.MICRO", s)
	}
	var n [3]int
	for i, x := range f {
		v, err := strconv.Atoi(x)
		if err != nil || v < 0 {
			return Release{}, fmt.Errorf("slurmlab: release %q: %q is not a number", s, x)
		}
		n[i] = v
	}
	return Release{n[0], n[1], n[2]}, nil
}

func (r Release) String() string { return fmt.Sprintf("%d.%02d.%d", r.Major, r.Minor, r.Micro) }

// Series is "22.05".
func (r Release) Series() string { return fmt.Sprintf("%d.%02d", r.Major, r.Minor) }

// AtLeast reports whether r is series major.minor or later.
func (r Release) AtLeast(major, minor int) bool {
	return r.Major > major || r.Major == major && r.Minor >= minor
}

// daemonRelease asks the series' slurmctld which release it is (slurmctld
// -V needs no configuration, unlike the client commands).
func daemonRelease(ctx context.Context, root string) (Release, error) {
	argv := []string{sbinCtld, "-V"}
	if root != "" {
		argv = []string{"chroot", root, "/usr/sbin/slurmctld", "-V"}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return Release{}, fmt.Errorf("slurmlab: %s: %w", strings.Join(argv, " "), err)
	}
	f := strings.Fields(string(out)) // "slurm 24.11.5", "slurm-wlm 22.05.8"
	if len(f) != 2 {
		return Release{}, fmt.Errorf("slurmlab: %s printed %q", strings.Join(argv, " "), out)
	}
	return ParseRelease(f[1])
}
