package slurmstate

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Reading one job whatever its state, for the commands and duties that
// follow a job rather than poll the cluster (`gangtopo why`, `gangtopo
// unbind`, defragmentation waiting for a gang to start, or for a requeued
// job to be pending again): `squeue --json --jobs=ID --states=all`.
//
// Not `scontrol -o show job`: its text prints the user's job name and
// comment unescaped among Slurm's own Key=Value words, and before the
// state (JobName comes second), so a job named `x JobState=RUNNING` reads
// as running to a parser that keeps a key's first value. In JSON every
// value is a string of its own.
//
// Slurm 22.05's `squeue --json` ignores --jobs and --states and prints
// every job slurmctld holds (src/squeue/data.c, dump_data), later series
// filter; so the record is always picked here by its ID (Record.Is).

// Record is one job as squeue --json lists it, in any state. Fields a
// series does not print are empty.
type Record struct {
	// ID is job_id; for a component of a heterogeneous job HetJob and
	// HetOffset are set, for an array's task ArrayJob and ArrayTask
	// (ArrayTasks for an array's record of pending tasks, "5-9%2").
	ID                  string
	ArrayJob, ArrayTask int64
	ArrayTaskSet        bool
	ArrayTasks          string
	HetJob, HetOffset   int64
	HetSet              string // het_job_id_set: the components' IDs
	// State is the base state (PENDING, RUNNING, ...); Flags the state's
	// flags of 23.02 and later (REQUEUED, COMPLETING, ...).
	State string
	Flags []string
	// Reason is Slurm's state_reason (Resources, Priority, ...);
	// Description its state_description.
	Reason, Description string
	// Nodes is the host list the job runs on ("" while pending).
	Nodes                 string
	Name, User, Partition string
	Features, Prefer      string
	ReqNodes, ExcNodes    string
	Comment, AdminComment string
	Reservation, QOS      string
	Priority              int64
}

// Is says whether the record is the job id names: "123" (a job, or the
// record of an array's job 123), "123_4" (an array's task), "123+1" (a
// heterogeneous job's component).
func (r *Record) Is(id string) bool {
	if job, off, ok := strings.Cut(id, "+"); ok {
		return r.HetJob > 0 && strconv.FormatInt(r.HetJob, 10) == job && strconv.FormatInt(r.HetOffset, 10) == off
	}
	if job, task, ok := strings.Cut(id, "_"); ok {
		return r.ArrayJob > 0 && r.ArrayTaskSet && strconv.FormatInt(r.ArrayJob, 10) == job && strconv.FormatInt(r.ArrayTask, 10) == task
	}
	return r.ID == id
}

// Target is what an update of this record alone names (as
// PendingJob.Target): "123+1" for a heterogeneous job's component,
// "123_[5-9]" for an array's record of pending tasks, "123_4" for an
// array's task, the ID otherwise.
func (r *Record) Target() string {
	switch {
	case r.HetJob > 0 && r.HetSet != "":
		return fmt.Sprintf("%d+%d", r.HetJob, r.HetOffset)
	case r.ArrayJob > 0 && r.ArrayTasks != "":
		tasks, _, _ := strings.Cut(r.ArrayTasks, "%")
		return fmt.Sprintf("%d_[%s]", r.ArrayJob, tasks)
	case r.ArrayJob > 0 && r.ArrayTaskSet:
		return fmt.Sprintf("%d_%d", r.ArrayJob, r.ArrayTask)
	}
	return r.ID
}

// ParseSqueueRecords reads every job of `squeue --json` output; label
// names the source in errors. Only job_id and job_state are required;
// every other field is read leniently (a value of another type reads as
// not given), as no capacity depends on them.
func ParseSqueueRecords(data []byte, label string) ([]Record, error) {
	s := &jsonScanner{data: data}
	var out []Record
	_, saw, err := s.openAPIDoc("jobs", func(i int) error {
		r, err := s.record()
		if err != nil {
			return fmt.Errorf("jobs[%d]%s: %w", i, idSuffix(r.ID), err)
		}
		out = append(out, r)
		return nil
	})
	if err == nil && !saw {
		err = fmt.Errorf("no %q list", "jobs")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return out, nil
}

// FindRecord is the record of job id in squeue --json output; ok is false
// when Slurm lists no such job.
func FindRecord(data []byte, label, id string) (r Record, ok bool, err error) {
	recs, err := ParseSqueueRecords(data, label)
	if err != nil {
		return Record{}, false, err
	}
	for i := range recs {
		if recs[i].Is(id) {
			return recs[i], true, nil
		}
	}
	return Record{}, false, nil
}

// ReadJob runs `squeue --json --jobs=id --states=all` (from binDir when
// set, killed with what it started after timeout) and returns the job's
// record; ok is false when Slurm does not know the job (any more). A
// command that runs out of time wraps ErrUpdateTimeout.
func ReadJob(ctx context.Context, binDir string, timeout time.Duration, id string) (r Record, ok bool, err error) {
	label := "squeue --json --jobs=" + id
	out, err := RunSqueueJSON(ctx, binDir, timeout, "--jobs="+id, "--states=all")
	if err == nil {
		r, ok, err = FindRecord(out, label, id)
	}
	if err != nil && unknownJob(err.Error()) {
		return Record{}, false, nil
	}
	return r, ok, err
}

// RunSqueueJSON runs `squeue --json args...` (from binDir when set, killed
// with what it started after timeout) and returns what it printed on its
// standard output (up to MaxOutputBytes); the error carries the first line
// of its standard error. A command that runs out of time wraps
// ErrUpdateTimeout.
func RunSqueueJSON(ctx context.Context, binDir string, timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bin := "squeue"
	if binDir != "" {
		bin = filepath.Join(binDir, bin)
	}
	args = append([]string{"--json"}, args...)
	observeCommand("squeue", args)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stdout, stderr := limitedBuffer{limit: MaxOutputBytes}, limitedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	label := "squeue " + strings.Join(args, " ")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s: %w within %s (slurmctld busy or down?); killed", label, ErrUpdateTimeout, timeout)
	case stdout.over:
		return nil, fmt.Errorf("%s: printed more than %d bytes", label, MaxOutputBytes)
	case err != nil:
		return nil, fmt.Errorf("%s: %w%s%s", label, err, firstLine(stderr.Bytes()), jsonHint(SqueueJSON, stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// unknownJob says whether Slurm's answer is that it knows no such job.
func unknownJob(msg string) bool { return strings.Contains(msg, "Invalid job id") }

func (s *jsonScanner) record() (Record, error) {
	var r Record
	var seen int
	var field []byte
	err := s.object(func(key []byte) error {
		field = key
		return s.recordField(string(key), &r, &seen)
	})
	switch {
	case err != nil:
		return r, fmt.Errorf("field %s: %w", field, err)
	case seen&jID == 0:
		return r, fmt.Errorf("field job_id: missing")
	case seen&jState == 0:
		return r, fmt.Errorf("field job_state: missing")
	}
	return r, nil
}

func (s *jsonScanner) recordField(key string, r *Record, seen *int) error {
	var err error
	switch key {
	case "job_id":
		var id int64
		if id, err = s.count64(); err == nil && id == 0 {
			err = fmt.Errorf("job ID 0")
		}
		r.ID, *seen = strconv.FormatInt(id, 10), *seen|jID
	case "job_state":
		r.State, r.Flags, err = s.stateList()
		*seen |= jState
	case "array_task_id":
		r.ArrayTask, r.ArrayTaskSet, err = s.looseNum()
	default:
		if dst := r.strField(key); dst != nil {
			*dst, err = s.looseStr()
		} else if dst := r.intField(key); dst != nil {
			*dst, err = s.looseInt()
		} else {
			err = s.skip()
		}
	}
	return err
}

func (r *Record) strField(key string) *string {
	switch key {
	case "state_reason":
		return &r.Reason
	case "state_description":
		return &r.Description
	case "nodes":
		return &r.Nodes
	case "name":
		return &r.Name
	case "user_name":
		return &r.User
	case "partition":
		return &r.Partition
	case "features":
		return &r.Features
	case "prefer":
		return &r.Prefer
	case "required_nodes":
		return &r.ReqNodes
	case "excluded_nodes":
		return &r.ExcNodes
	case "comment":
		return &r.Comment
	case "admin_comment":
		return &r.AdminComment
	case "resv_name":
		return &r.Reservation
	case "qos":
		return &r.QOS
	case "array_task_string":
		return &r.ArrayTasks
	case "het_job_id_set":
		return &r.HetSet
	}
	return nil
}

func (r *Record) intField(key string) *int64 {
	switch key {
	case "array_job_id":
		return &r.ArrayJob
	case "het_job_id":
		return &r.HetJob
	case "het_job_offset":
		return &r.HetOffset
	case "priority":
		return &r.Priority
	}
	return nil
}

// ParseSqueuePending reads squeue --json output as a poll does and
// returns every pending job (with a gangtopo decision or not), for the
// commands that look at pending jobs without polling nodes (`gangtopo
// unbind`: gangtopo's pins, actuate.Pins).
func ParseSqueuePending(data []byte, label string) ([]PendingJob, error) {
	var all []PendingJob
	if _, _, err := parseSqueueJSON(data, label, nil, pendingLists{all: &all}); err != nil {
		return nil, err
	}
	return all, nil
}
