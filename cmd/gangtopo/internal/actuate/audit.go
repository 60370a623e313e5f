package actuate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Entry is one line of the audit log: one change, before it is made
// (Result "intent") or after (Result "ok", "dry-run", or what went wrong).
type Entry struct {
	Time time.Time `json:"time"`
	// Ref pairs a change's intent line with its outcome line.
	Ref string `json:"ref,omitempty"`
	// Action names the change: hold (reservation made), attach, requeue,
	// expedite, release (hold ended), abandon (a plan given up before
	// anything was requeued), pin, unpin, rebind, unbind, qos (a job moved
	// to another QOS), limit (a QOS limit), sync (a quota sync change),
	// restore (quota off putting back what sync changed).
	Action string `json:"action"`
	// Job is the job acted on ("" for a QOS or account); Gang the gang a
	// defragmentation plan is for.
	Job  string `json:"job,omitempty"`
	Gang string `json:"gang,omitempty"`
	// Result is "intent" before the change, then "ok" or what went wrong.
	Result       string  `json:"result"`
	GPUs         int     `json:"gpus,omitempty"`
	Nodes        string  `json:"nodes,omitempty"`
	Domain       string  `json:"domain,omitempty"`
	Reservation  string  `json:"reservation,omitempty"`
	QOS          string  `json:"qos,omitempty"`
	LostGPUHours float64 `json:"lost_gpu_hours,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
	// By says who acted: "controller", or the command and its user.
	By string `json:"by"`
	// Duty is the part of gangtopo that asked: rebind, defrag, quota,
	// unbind.
	Duty    string `json:"duty,omitempty"`
	Command string `json:"command,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Results of an entry besides "ok" and an error's text.
const (
	ResultIntent = "intent"
	ResultOK     = "ok"
)

// Audit is the audit log file: append-only JSON lines, each written whole
// and synced under an exclusive lock, so the commands and the controller
// can share it. It is also the record the limits are counted from.
type Audit struct {
	Path string
}

// Append writes one entry and syncs it. The directory must exist (a
// missing one is the configuration's error, named).
func (a Audit) Append(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("audit log (actions.audit_log): %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("audit log %s: lock: %w", a.Path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("audit log %s: %w", a.Path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit log %s: %w", a.Path, err)
	}
	return nil
}

// CheckWritable says whether entries can be appended (the directory
// exists and the file, if there, is a regular file we may write), before
// anything is done that would need one.
func (a Audit) CheckWritable() error {
	dir := filepath.Dir(a.Path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("actions.audit_log %s: directory %s does not exist (create it, or set actions.audit_log in gangtopo.yaml)", a.Path, dir)
	}
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("actions.audit_log: %w", err)
	}
	return f.Close()
}

// Changes reads the changes of the last keep before now: the outcome
// line of each, or its intent line when no outcome was written (the
// process died between the two: the change may have been made, and counts
// as made, with Result "ok"). A missing file has none; a line that does
// not read is skipped and counted (bad).
func (a Audit) Changes(now time.Time, keep time.Duration) (out []Entry, bad int, err error) {
	f, err := os.Open(a.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	open := map[string]int{} // ref -> index in out of its intent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Time.IsZero() {
			bad++
			continue
		}
		if now.Sub(e.Time) >= keep {
			continue
		}
		if i, ok := open[e.Ref]; ok && e.Ref != "" && e.Result != ResultIntent {
			out[i] = e // the outcome replaces its intent
			delete(open, e.Ref)
			continue
		}
		if e.Result == ResultIntent {
			open[e.Ref] = len(out)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, bad, fmt.Errorf("audit log %s: %w", a.Path, err)
	}
	for _, i := range open {
		out[i].Result = ResultOK // no outcome written: counted as made
		out[i].Reason = "no outcome recorded (the process ended before it); counted as made"
	}
	return out, bad, nil
}
