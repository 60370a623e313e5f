package main

import (
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// commandDoor is the door (actuate) through which a command an
// administrator runs (`unbind --clear`, `defrag apply --yes`, `quota sync
// --yes`, `quota off --yes`) changes Slurm: it acts as that administrator
// (Slurm checks the authority of each command), with gangtopo.yaml's audit
// log, and one line per change on w. What leads and the controller's
// limits do not apply: the administrator chose this change.
func commandDoor(cfg ctld.Config, slurmBin, command string, w io.Writer) *actuate.Door {
	d := actuate.NewDoor(actuate.SlurmRunner(slurmBin), actuate.Audit{Path: cfg.Actions.AuditLog}, actuate.Always{},
		command+" ("+whoAmI()+")", actuate.Config{Backoff: cfg.Actions.Backoff, MaxBackoff: cfg.Actions.MaxBackoff})
	d.Log = func(e actuate.Entry) {
		if e.Result != actuate.ResultOK {
			fmt.Fprintf(w, "  %s %s: %s\n", e.Action, e.Job+e.QOS, e.Result)
		}
	}
	return d
}

// whoAmI names the user running the command, for the audit log.
func whoAmI() string {
	uid := os.Getuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return "user " + u.Username
	}
	return "uid " + strconv.Itoa(uid)
}
