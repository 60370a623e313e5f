package ctld

import (
	"bufio"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// Slurm's own user. Inside slurmctld the plugin runs as SlurmUser, so the
// effective uid already is slurmctld's user. The CLI and the controller
// daemon may run as root (docs/admin.md, "Deploying on a cluster"), where
// a gangtopo.yaml owned by the slurm user, which docs/admin.md allows,
// would otherwise be refused: for a file whose owner is not trusted
// otherwise, the owner is looked up and compared with slurm.conf's
// SlurmUser. Only then: the lookup may ask NSS, which the plugin inside
// slurmctld never needs.

// slurmConfPath is slurm.conf: $SLURM_CONF, else Slurm's default path.
func slurmConfPath() string {
	if p := os.Getenv("SLURM_CONF"); p != "" {
		return p
	}
	return "/etc/slurm/slurm.conf"
}

// slurmUserName is SlurmUser from slurm.conf at path ("root", Slurm's
// default, when the file says nothing; "" when it cannot be read).
func slurmUserName(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	name := "root"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.EqualFold(strings.TrimSpace(key), "SlurmUser") {
			name = strings.TrimSpace(value)
		}
	}
	return name
}

// isSlurmUser reports whether uid is slurm.conf's SlurmUser, and names it.
func isSlurmUser(uid uint32) (bool, string) {
	name := slurmUserName(slurmConfPath())
	if name == "" {
		return false, ""
	}
	u, err := user.Lookup(name)
	if err != nil {
		return false, name
	}
	return u.Uid == strconv.FormatUint(uint64(uid), 10), name
}
