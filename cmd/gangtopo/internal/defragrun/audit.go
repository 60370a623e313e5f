package defragrun

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

	"github.com/gangtopo/gangtopo/selector/defrag"
)

// Entry is one line of the audit log: one action.
type Entry struct {
	Time time.Time `json:"time"`
	// Action: hold (reservation made and the gang attached), requeue,
	// expedite, release (hold ended), abandon (a plan given up before
	// anything was requeued), pin (a preempting gang's ReqNodeList).
	Action string `json:"action"`
	// Job is the job acted on; Gang the gang the plan is for.
	Job  string `json:"job"`
	Gang string `json:"gang,omitempty"`
	// Result is "ok", or what went wrong.
	Result       string  `json:"result"`
	GPUs         int     `json:"gpus,omitempty"`
	Nodes        string  `json:"nodes,omitempty"`
	Domain       string  `json:"domain,omitempty"`
	Reservation  string  `json:"reservation,omitempty"`
	LostGPUHours float64 `json:"lost_gpu_hours,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
	// By says who acted: "defrag apply" (with the user) or "controller".
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Audit is the audit log file: append-only JSON lines, each written whole
// under an exclusive lock, so `defrag apply` and the controller can share
// it. It is also the History the limits are checked against.
type Audit struct {
	Path string
}

// Append writes one entry. The directory must exist (a missing one is the
// configuration's error, named).
func (a Audit) Append(e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("defrag audit log (defrag.audit_log): %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("defrag audit log %s: lock: %w", a.Path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("defrag audit log %s: %w", a.Path, err)
	}
	return f.Sync()
}

// CheckWritable says whether entries can be appended (the directory
// exists and the file, if there, is a regular file we may write), before
// anything is done that would need one.
func (a Audit) CheckWritable() error {
	dir := filepath.Dir(a.Path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("defrag.audit_log %s: directory %s does not exist (create it, or set defrag.audit_log in gangtopo.yaml)", a.Path, dir)
	}
	f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("defrag.audit_log: %w", err)
	}
	return f.Close()
}

// History reads the entries of the last keep before now into the limits'
// History: every requeue that took, and every gang a plan held room for.
// A missing file is an empty history; a line that does not read is
// skipped and counted (bad).
func (a Audit) History(now time.Time, keep time.Duration) (h *defrag.History, bad int, err error) {
	h = &defrag.History{}
	f, err := os.Open(a.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("defrag audit log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Time.IsZero() {
			bad++
			continue
		}
		if now.Sub(e.Time) >= keep || e.Result != "ok" {
			continue
		}
		switch e.Action {
		case "requeue":
			h.Add(defrag.Record{At: e.Time, Kind: defrag.Requeued, Job: e.Job, GPUs: e.GPUs, Lost: e.LostGPUHours})
		case "hold":
			h.Add(defrag.Record{At: e.Time, Kind: defrag.Started, Job: e.Gang, GPUs: e.GPUs})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, bad, fmt.Errorf("defrag audit log %s: %w", a.Path, err)
	}
	return h, bad, nil
}
