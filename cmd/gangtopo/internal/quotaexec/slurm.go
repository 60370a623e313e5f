package quotaexec

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// QOS is what gangtopo reads and writes of one Slurm QOS.
type QOS struct {
	Name string
	// GrpGPUs is GrpTRES's gres/gpu, -1 when it sets none.
	GrpGPUs     int
	Preempt     []string
	PreemptMode string // lower case, "cluster" for slurm.conf's
	// Description is the QOS's description; Mark is gangtopo's record in
	// it (ok false: gangtopo did not create the QOS).
	Description string
	Mark        Mark
	Ours        bool
}

// Assoc is what an account's associations (its own, and its users') let
// its jobs use.
type Assoc struct {
	Account string
	// QOS are the QOS every association of the account allows (a job
	// runs under its user's association, so each must).
	QOS []string
	// DefaultQOS is the default QOS of every association, "" when they
	// differ.
	DefaultQOS string
	// OwnDefault is the default QOS of the account's own association (no
	// user, no partition): what `sacctmgr modify account` sets, and what
	// quota sync records and quota off puts back ("": none).
	OwnDefault string
	// Lines are the account's associations one by one.
	Lines []AssocLine
}

// AssocLine is one association as sacctmgr shows it.
type AssocLine struct {
	Account, User, Partition string
	QOS                      []string
	DefaultQOS               string
}

// Accounting is what Slurm's database says, as far as quotas go.
type Accounting struct {
	QOS      map[string]QOS   // by name (lower case, as Slurm keeps them)
	Accounts map[string]Assoc // by account; every account Slurm knows
}

// Sacctmgr reads Slurm's accounting database through sacctmgr (from
// BinDir when set), each command killed after Timeout. It needs slurmdbd.
// It only reads: every change goes through the door (actuate).
type Sacctmgr struct {
	BinDir  string
	Timeout time.Duration
}

func (s Sacctmgr) run(ctx context.Context, args ...string) (string, error) {
	return slurmstate.Command(ctx, s.BinDir, s.Timeout, "sacctmgr", args...)
}

// The formats Read asks sacctmgr for (-nP: no header, '|' between
// fields).
const (
	qosFormat   = "format=name,grptres,preempt,preemptmode,description"
	assocFormat = "format=account,user,partition,qos,defaultqos"
)

// Read reads the QOS and the accounts' associations.
func (s Sacctmgr) Read(ctx context.Context) (*Accounting, error) {
	out, err := s.run(ctx, "-nP", "show", "qos", qosFormat)
	if err != nil {
		return nil, fmt.Errorf("reading the QOS: %w", err)
	}
	qos, err := ParseQOS(out)
	if err != nil {
		return nil, err
	}
	out, err = s.run(ctx, "-nP", "show", "association", assocFormat)
	if err != nil {
		return nil, fmt.Errorf("reading the associations: %w", err)
	}
	assocs, err := ParseAssocs(out)
	if err != nil {
		return nil, err
	}
	return &Accounting{QOS: qos, Accounts: assocs}, nil
}

// ParseQOS reads `sacctmgr -nP show qos format=name,grptres,preempt,
// preemptmode,description`. A description holding '|' (set by hand) is
// read whole: it is the last field.
func ParseQOS(out string) (map[string]QOS, error) {
	qos := map[string]QOS{}
	for _, line := range lines(out) {
		f := strings.SplitN(line, "|", 5)
		if len(f) != 5 || f[0] == "" {
			return nil, fmt.Errorf("sacctmgr show qos: %q is not name|grptres|preempt|preemptmode|description", line)
		}
		gpus, err := grpGPUs(f[1])
		if err != nil {
			return nil, fmt.Errorf("sacctmgr show qos: QOS %s: %v", f[0], err)
		}
		m, ours := ParseMark(f[4])
		qos[f[0]] = QOS{Name: f[0], GrpGPUs: gpus, Preempt: splitList(f[2]), PreemptMode: strings.ToLower(f[3]),
			Description: f[4], Mark: m, Ours: ours}
	}
	return qos, nil
}

// grpGPUs reads the gres/gpu of a TRES list ("cpu=8,gres/gpu=64"); -1
// when it has none.
func grpGPUs(tres string) (int, error) {
	for _, kv := range splitList(tres) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k != "gres/gpu" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("GrpTRES %q: gres/gpu is not a count", tres)
		}
		return n, nil
	}
	return -1, nil
}

// ParseAssocs reads `sacctmgr -nP show association format=account,user,
// partition,qos,defaultqos`: per account, its lines, the QOS all of them
// allow and their common default.
func ParseAssocs(out string) (map[string]Assoc, error) {
	assocs := map[string]Assoc{}
	for _, line := range lines(out) {
		f := strings.Split(line, "|")
		if len(f) != 5 || f[0] == "" {
			return nil, fmt.Errorf("sacctmgr show association: %q is not account|user|partition|qos|defaultqos", line)
		}
		l := AssocLine{Account: f[0], User: f[1], Partition: f[2], QOS: splitList(f[3]), DefaultQOS: f[4]}
		a, seen := assocs[l.Account]
		if !seen {
			a = Assoc{Account: l.Account, QOS: slices.Clone(l.QOS), DefaultQOS: l.DefaultQOS}
		} else {
			a.QOS = slices.DeleteFunc(a.QOS, func(q string) bool { return !slices.Contains(l.QOS, q) })
			if a.DefaultQOS != l.DefaultQOS {
				a.DefaultQOS = ""
			}
		}
		if l.User == "" && l.Partition == "" {
			a.OwnDefault = l.DefaultQOS
		}
		a.Lines = append(a.Lines, l)
		assocs[l.Account] = a
	}
	return assocs, nil
}

func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}
