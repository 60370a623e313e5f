package quotaexec

import (
	"fmt"
	"strings"
)

// gangtopo changes only the QOS it created, and puts back what it changed
// in the accounts when quotas are switched off. Both need a record that
// outlives the command that made the change, that any gangtopo (the next
// sync, `quota off`, the controller on another host) can read, and that no
// user can write: the Description of each QOS gangtopo creates, which
// only Slurm's administrators may set (sacctmgr), and which sacctmgr shows
// to everyone:
//
//	gangtopo-quota v1 role=own account=teama default=normal
//	gangtopo-quota v1 role=borrow
//	gangtopo-quota v1 role=reclaim
//
// An account's own QOS records the default QOS the account's association
// had before sync made the QOS its default ("-": none), so `quota off`
// can put it back. Slurm keeps descriptions in lower case (checked on the
// lab's 22.05: `sacctmgr add qos ... Description=ABC` shows "abc"), so
// every value here is lower case already: account and QOS names are.

// markMagic begins gangtopo's record in a QOS's description.
const markMagic = "gangtopo-quota v1"

// Roles of gangtopo's QOS.
const (
	RoleOwn     = "own"
	RoleBorrow  = "borrow"
	RoleReclaim = "reclaim"
)

// Mark is gangtopo's record in the description of a QOS it created.
type Mark struct {
	// Role is what the QOS is for: own (an account's share), borrow or
	// reclaim.
	Role string
	// Account and Default (own QOS only): the account whose share it
	// holds, and the default QOS of the account's association before sync
	// made this QOS the default ("" for none).
	Account, Default string
}

// String is the mark as written into the description.
func (m Mark) String() string {
	if m.Role != RoleOwn {
		return markMagic + " role=" + m.Role
	}
	d := m.Default
	if d == "" {
		d = "-"
	}
	return fmt.Sprintf("%s role=%s account=%s default=%s", markMagic, m.Role, m.Account, d)
}

// ParseMark reads a QOS's description; ok is false when it is not
// gangtopo's record (a QOS gangtopo did not create, or whose description
// someone changed).
func ParseMark(description string) (m Mark, ok bool) {
	rest, found := strings.CutPrefix(strings.ToLower(strings.TrimSpace(description)), markMagic+" ")
	if !found {
		return Mark{}, false
	}
	for _, kv := range strings.Fields(rest) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "role":
			m.Role = v
		case "account":
			m.Account = v
		case "default":
			m.Default = v
		default:
			return Mark{}, false
		}
	}
	if m.Default == "-" {
		m.Default = ""
	}
	switch {
	case (m.Role == RoleBorrow || m.Role == RoleReclaim) && m.Account == "" && m.Default == "":
		return m, true
	case m.Role == RoleOwn && m.Account != "":
		return m, true
	}
	return Mark{}, false
}
