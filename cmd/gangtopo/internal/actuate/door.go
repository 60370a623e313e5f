package actuate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Change is one change to Slurm: the command and what its audit lines
// say.
type Change struct {
	// Entry is the audit line's content: Action and Job (or QOS) at least.
	Entry
	// Cmd is the Slurm client (scontrol, sacctmgr); Args its arguments,
	// each its own word (no shell).
	Cmd  string
	Args []string
	// Timeout bounds the command (0: DefaultTimeout); one that runs out
	// ends the cycle's changes (ErrBusy).
	Timeout time.Duration
	// Undo marks a change that puts back what gangtopo made (a pin taken
	// out, a hold ended, a QOS restored): it is made while actions are
	// switched off too, since switching off means putting them back.
	Undo bool
}

// key is what the back-off counts this change's failures by: the action
// and what it acts on.
func (c *Change) key() string {
	return c.Action + " " + c.Job + " " + c.QOS + " " + c.Reservation
}

// Runner runs one Slurm client command, killed after timeout, and
// returns what it printed; a command that ran out of time wraps
// slurmstate.ErrUpdateTimeout.
type Runner func(ctx context.Context, timeout time.Duration, cmd string, args ...string) (string, error)

// DefaultTimeout bounds a change's command when it names no timeout.
const DefaultTimeout = 10 * time.Second

// SlurmRunner runs the Slurm clients from binDir (or $PATH).
func SlurmRunner(binDir string) Runner {
	return func(ctx context.Context, timeout time.Duration, cmd string, args ...string) (string, error) {
		return slurmstate.Command(ctx, binDir, timeout, cmd, args...)
	}
}

// Why the door did not make a change. Each is wrapped with the details;
// Refused says whether an error is one of them (nothing was run).
var (
	ErrDryRun    = errors.New("dry run (actions.dry_run): not made")
	ErrNotLeader = errors.New("this controller is not the one that acts")
	ErrLimit     = errors.New("actions.max_per_cycle reached: left for the next cycle")
	ErrBusy      = errors.New("a Slurm command ran out of time this cycle: no more changes until the next")
	ErrBackoff   = errors.New("backing off after a failure")
	ErrAudit     = errors.New("the audit line could not be written, so the change was not made")
	ErrOff       = errors.New("actions are switched off (actions.enabled: false)")
)

// Refused says whether err is the door's refusal: the command did not run.
func Refused(err error) bool {
	for _, r := range []error{ErrDryRun, ErrNotLeader, ErrLimit, ErrBusy, ErrBackoff, ErrAudit, ErrOff} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// Config are the door's rules (gangtopo.yaml's actions: section).
type Config struct {
	// Off: no change is made (ErrOff) but those that put back what
	// gangtopo made (Change.Undo).
	Off bool
	// DryRun: changes are logged, not made.
	DryRun bool
	// MaxPerCycle bounds the changes between two Begin calls (0: none).
	MaxPerCycle int
	// Backoff and MaxBackoff: the wait after a change failed for a key.
	Backoff, MaxBackoff time.Duration
}

// Door is the one way gangtopo changes Slurm (the package comment gives
// the steps). It is not safe for concurrent use: one duty loop, or one
// command, owns it.
type Door struct {
	run    Runner
	audit  Audit
	leader Leader
	by     string
	cfg    Config
	bo     *backoff
	// Now is the clock; Log, when set, is told every change's outcome
	// (and each dry run's would-be change).
	Now func() time.Time
	Log func(Entry)

	began   bool
	lead    bool
	why     string
	made    int
	busy    bool
	lastRef string
}

// NewDoor makes a door: run runs the commands, audit records them,
// leader says whether to act, by names who acts in the audit lines.
func NewDoor(run Runner, audit Audit, leader Leader, by string, cfg Config) *Door {
	if cfg.Backoff <= 0 {
		cfg.Backoff = 30 * time.Second
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.Backoff)
	return &Door{run: run, audit: audit, leader: leader, by: by, cfg: cfg, bo: newBackoff(cfg.Backoff, cfg.MaxBackoff), Now: time.Now}
}

// SetConfig replaces the rules (a reloaded gangtopo.yaml); the back-off
// state is kept.
func (d *Door) SetConfig(cfg Config) {
	if cfg.Backoff <= 0 {
		cfg.Backoff = 30 * time.Second
	}
	d.cfg = cfg
	d.bo.base, d.bo.max = cfg.Backoff, max(cfg.MaxBackoff, cfg.Backoff)
}

// Begin starts a cycle: the leader is asked once, the cycle's count and
// its busy flag start afresh. It says whether this process may act now
// (switched off, it may still put back what it made), and why not.
func (d *Door) Begin(ctx context.Context) (lead bool, why string) {
	d.began, d.made, d.busy = true, 0, false
	d.bo.forget(d.Now())
	d.lead, d.why = d.leader.Lead(ctx)
	return d.lead, d.why
}

// Leads says what the last Begin found.
func (d *Door) Leads() (bool, string) { return d.lead, d.why }

// Room says how many more changes this cycle's limit allows (-1: no
// limit), so that a duty does not start what it could not finish, or put
// back, within the cycle (a plan's hold, requeues and release).
func (d *Door) Room() int {
	if d.cfg.MaxPerCycle <= 0 {
		return -1
	}
	return max(d.cfg.MaxPerCycle-d.made, 0)
}

// Made is how many changes were made (or tried) since the last Begin:
// what actions.max_per_cycle bounds.
func (d *Door) Made() int { return d.made }

// Off says whether actions are switched off (only undoing is allowed).
func (d *Door) Off() bool { return d.cfg.Off }

// Do makes one change, or says why not. out is what the command printed.
func (d *Door) Do(ctx context.Context, c Change) (out string, err error) {
	if !d.began {
		d.Begin(ctx)
	}
	now := d.Now()
	c.Time, c.By, c.Command = now.UTC(), d.by, c.Cmd+" "+strings.Join(c.Args, " ")
	if err := d.admit(&c, now); err != nil {
		return "", err
	}
	c.Ref, c.Result = d.ref(now), ResultIntent
	if err := d.audit.Append(c.Entry); err != nil {
		d.bo.failed(c.key(), now)
		return "", fmt.Errorf("%w: %v", ErrAudit, err)
	}
	d.made++
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	out, err = d.run(ctx, timeout, c.Cmd, c.Args...)
	c.Time, c.Result = d.Now().UTC(), ResultOK
	switch {
	case err != nil:
		c.Result = err.Error()
		wait := d.bo.failed(c.key(), now)
		d.busy = d.busy || errors.Is(err, slurmstate.ErrUpdateTimeout)
		err = fmt.Errorf("%w (not tried again for this before %s)", err, wait)
	default:
		d.bo.succeeded(c.key())
	}
	if aerr := d.audit.Append(c.Entry); aerr != nil {
		c.Reason = strings.TrimPrefix(c.Reason+"; its outcome line could not be written: "+aerr.Error(), "; ")
	}
	d.tell(c.Entry)
	return out, err
}

// admit checks the rules before anything is written.
func (d *Door) admit(c *Change, now time.Time) error {
	switch {
	case c.Action == "" || c.Cmd == "" || len(c.Args) == 0:
		return fmt.Errorf("actuate: a change needs an action, a command and its arguments (got %q %q %q)", c.Action, c.Cmd, c.Args)
	case d.cfg.DryRun:
		e := c.Entry
		e.Result = "dry-run"
		d.tell(e)
		return fmt.Errorf("%w: %s", ErrDryRun, c.Command)
	case !d.lead:
		return fmt.Errorf("%w: %s", ErrNotLeader, d.why)
	case d.cfg.Off && !c.Undo:
		return ErrOff
	case d.busy:
		return ErrBusy
	case d.cfg.MaxPerCycle > 0 && d.made >= d.cfg.MaxPerCycle:
		return fmt.Errorf("%w (%d)", ErrLimit, d.cfg.MaxPerCycle)
	}
	if until := d.bo.waiting(c.key(), now); !until.IsZero() {
		return fmt.Errorf("%w: %s %s failed before; not tried again before %s", ErrBackoff, c.Action, orDash(c.Job), until.UTC().Format(time.RFC3339))
	}
	return nil
}

func (d *Door) tell(e Entry) {
	if d.Log != nil {
		d.Log(e)
	}
}

// refSeq makes refs unique within a process; the PID and the time make
// them unique across the processes sharing one audit log.
var refSeq atomic.Uint64

func (d *Door) ref(now time.Time) string {
	d.lastRef = strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(now.UnixNano(), 36) + "-" + strconv.FormatUint(refSeq.Add(1), 36)
	return d.lastRef
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
