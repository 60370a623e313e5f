package defragrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// fakeSlurm is Slurm for the door (run: the commands it is given, each
// answered with the error of the first prefix of fail it starts with) and
// for reading (Reader: jobs' states, holds).
type fakeSlurm struct {
	calls    []string
	timeouts map[time.Duration]int // each command's time limit, counted
	states   map[string]string     // job -> state; absent: unknown
	fail     map[string]error      // command prefix -> error
	holds    []Hold
	// onRequeue, when set, is the state a job has after its requeue;
	// onRun, when set, is called with each command line before it is
	// answered.
	onRequeue string
	onRun     func(line string)
}

func (f *fakeSlurm) run(_ context.Context, timeout time.Duration, cmd string, args ...string) (string, error) {
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	if f.timeouts == nil {
		f.timeouts = map[time.Duration]int{}
	}
	f.timeouts[timeout]++
	if f.onRun != nil {
		f.onRun(line)
	}
	for prefix, err := range f.fail {
		if strings.HasPrefix(line, prefix) {
			return "", err
		}
	}
	if id, ok := strings.CutPrefix(line, "requeue "); ok && f.onRequeue != "" {
		f.states[id] = f.onRequeue
	}
	return "", nil
}

func (f *fakeSlurm) Job(_ context.Context, id string) (string, string, bool, error) {
	st, ok := f.states[id]
	return st, "Resources", ok, nil
}

func (f *fakeSlurm) Holds(context.Context) ([]Hold, error) { return f.holds, nil }

// testExecutor carries plans out through a door over f, auditing into a
// temporary file; alarms are collected.
func testExecutor(t *testing.T, f *fakeSlurm) (*Executor, *[]string) {
	t.Helper()
	audit := actuate.Audit{Path: filepath.Join(t.TempDir(), "actions.log")}
	cfg := ctld.DefaultDefrag()
	cfg.Timeout = 50 * time.Millisecond
	var alarms []string
	door := actuate.NewDoor(f.run, audit, actuate.Always{}, "test", actuate.Config{})
	return &Executor{Door: door, Slurm: f, Audit: audit, Cfg: cfg, Now: time.Now, Poll: time.Millisecond,
		Alarmf: func(format string, args ...any) { alarms = append(alarms, fmt.Sprintf(format, args...)) }}, &alarms
}

func proposal(victims ...string) *Proposal {
	pr := &Proposal{Gang: Gang{Job: slurmstate.PendingJob{ID: "40", User: "alice"}}, Domain: "leaf2", GangNode: "node[05-08]"}
	pr.Gang.Request.GPUs = 32
	for _, v := range victims {
		pr.Victims = append(pr.Victims, Victim{ID: v, GPUs: 1, Nodes: "node06", Lost: 0.5})
	}
	return pr
}

// The commands of a hold for gang 40 on leaf2, and of its end.
const (
	holdCmd   = "create reservation ReservationName=gangtopo_defrag_40 StartTime=now Duration=10 Nodes=node[05-08] Users=alice Flags=IGNORE_JOBS,FLEX,NO_HOLD_JOBS_AFTER_END"
	attachCmd = "update JobId=40 ReservationName=gangtopo_defrag_40"
	detachCmd = "update JobId=40 ReservationName="
	deleteCmd = "delete ReservationName=gangtopo_defrag_40"
)

func TestCarryHoldsThenRequeuesWhatBothPlansName(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING", "13": "RUNNING"}, onRequeue: "PENDING"}
	x, _ := testExecutor(t, f)
	// the plan names 12 and 13; by the re-check 13 has ended: only 12
	out, err := x.Carry(context.Background(), proposal("12", "13"), func(context.Context) (*Proposal, bool, error) {
		return proposal("12"), true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		holdCmd,                         // the room is held first (the hold's flags leave the gang alone at its end),
		attachCmd,                       // the gang attached,
		"requeue 12",                    // then what both plans name,
		"update JobId=12 StartTime=now", // made eligible at once
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"12"}, out.Requeued); diff != "" {
		t.Errorf("requeued (-want +got):\n%s", diff)
	}
	// every command within defrag.timeout (50 ms here), not the door's 10 s
	if diff := cmp.Diff(map[time.Duration]int{50 * time.Millisecond: 4}, f.timeouts); diff != "" {
		t.Errorf("time limits (-want +got):\n%s", diff)
	}
	changes, _, err := x.Audit.Changes(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h := History(changes)
	hour, lost := h.Spent(time.Now(), x.Cfg.Limits)
	data, _ := os.ReadFile(x.Audit.Path)
	// 4 changes, an intent and an outcome line each
	if hour != 1 || lost != 0.5 || !h.Protected("40", time.Now(), x.Cfg.Limits) || strings.Count(string(data), "\n") != 8 {
		t.Errorf("audit: %d requeues, %g lost, gang protected %v; log:\n%s", hour, lost, h.Protected("40", time.Now(), x.Cfg.Limits), data)
	}
	var hold actuate.Entry
	for _, c := range changes {
		if c.Action == "hold" {
			hold = c
		}
	}
	// the hold's line keeps what the plan is: the gang's GPUs and nodes,
	// its domain, the cost and the GPU-hours it loses
	wantHold := actuate.Entry{Action: "hold", Job: "40", Gang: "40", Result: "ok", GPUs: 32, Nodes: "node[05-08]", Domain: "leaf2",
		Reservation: "gangtopo_defrag_40", Duty: "defrag"}
	got := actuate.Entry{Action: hold.Action, Job: hold.Job, Gang: hold.Gang, Result: hold.Result, GPUs: hold.GPUs, Nodes: hold.Nodes,
		Domain: hold.Domain, Reservation: hold.Reservation, Duty: hold.Duty}
	if diff := cmp.Diff(wantHold, got); diff != "" {
		t.Errorf("hold's audit line (-want +got):\n%s", diff)
	}
}

func TestCarryAbandonsAStalePlan(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING", "14": "RUNNING"}}
	x, _ := testExecutor(t, f)
	// a new job 14 started in the domain: the re-plan needs it too
	_, err := x.Carry(context.Background(), proposal("12"), func(context.Context) (*Proposal, bool, error) {
		return proposal("12", "14"), true, nil
	})
	var se *StaleError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "also need job(s) 14") || !strings.Contains(err.Error(), "the hold is ended") {
		t.Fatalf("err = %v, want a stale plan naming job 14, its hold ended", err)
	}
	if diff := cmp.Diff([]string{holdCmd, attachCmd, detachCmd, deleteCmd}, f.calls); diff != "" {
		t.Errorf("calls (-want +got): nothing may be requeued\n%s", diff)
	}
}

// A requeue that does not go through, for whatever reason, ends the hold
// and says what was requeued before; nothing is requeued after it.
func TestCarryStopsAtARequeueThatDoesNotGoThrough(t *testing.T) {
	disabled := errors.New("scontrol requeue: exit status 1: Requested operation is presently disabled")
	tests := []struct {
		name  string
		setup func(f *fakeSlurm, x *Executor, cancel context.CancelFunc)
		calls []string
		err   string
	}{
		{"Slurm refuses the second", func(f *fakeSlurm, _ *Executor, _ context.CancelFunc) {
			f.fail = map[string]error{"requeue 13": disabled}
		}, []string{holdCmd, attachCmd, "requeue 12", "requeue 13", detachCmd, deleteCmd}, "the requeue of job 13 did not go through"},
		{"interrupted after the first", func(f *fakeSlurm, _ *Executor, cancel context.CancelFunc) {
			f.onRun = func(line string) {
				if line == "requeue 12" {
					cancel()
				}
			}
		}, []string{holdCmd, attachCmd, "requeue 12", detachCmd, deleteCmd}, "interrupted before job 13 was requeued"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING", "13": "RUNNING", "14": "RUNNING"}}
			x, _ := testExecutor(t, f)
			x.Cfg.Expedite = false
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tt.setup(f, x, cancel)
			pr := proposal("12", "13", "14")
			out, err := x.Carry(ctx, pr, func(context.Context) (*Proposal, bool, error) { return pr, true, nil })
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "the hold is ended") ||
				!strings.Contains(err.Error(), "1 job(s) requeued before: 12") || out == nil || len(out.Requeued) != 1 {
				t.Fatalf("err %v, outcome %+v: want %q, the hold ended, job 12 named", err, out, tt.err)
			}
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A plan the door's per-cycle limit could not see through (hold, attach,
// each requeue and its expedite, the hold's end) is not started.
func TestCarryNeedsRoomForTheWholePlan(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING"}}
	x, _ := testExecutor(t, f)
	// 3 victims: 4 + 2 x 3 = 10 changes; the limit leaves 9
	x.Door.SetConfig(actuate.Config{MaxPerCycle: 9})
	x.Door.Begin(context.Background())
	pr := proposal("12", "13", "14")
	if _, err := x.Carry(context.Background(), pr, nil); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("Carry: %v, want ErrNoRoom", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("ran %q, want nothing", f.calls)
	}
}

// An audit log that cannot be written stops a plan before any requeue:
// from the start, nothing is made; once the hold is made, no job is
// requeued, and the hold's end, which would need its audit line too, is
// reported loudly with what to do (the hold's flags make its own end
// harmless).
func TestCarryStopsWhenTheAuditLogCannotBeWritten(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING"}}
	x, _ := testExecutor(t, f)
	if err := os.Mkdir(x.Audit.Path, 0o755); err != nil { // a directory where the log should be
		t.Fatal(err)
	}
	_, err := x.Carry(context.Background(), proposal("12"), nil)
	if !errors.Is(err, actuate.ErrAudit) || len(f.calls) != 0 {
		t.Fatalf("from the start: %v, ran %q; want ErrAudit and nothing run", err, f.calls)
	}

	f = &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING"}}
	x, alarms := testExecutor(t, f)
	f.onRun = func(line string) {
		if line == attachCmd { // the disk fills up while the gang is attached
			_ = os.Remove(x.Audit.Path)
			_ = os.Mkdir(x.Audit.Path, 0o755)
		}
	}
	pr := proposal("12")
	_, err = x.Carry(context.Background(), pr, func(context.Context) (*Proposal, bool, error) { return pr, true, nil })
	if !errors.Is(err, actuate.ErrAudit) || !strings.Contains(err.Error(), "the hold gangtopo_defrag_40 could not be ended") {
		t.Fatalf("err %v, want ErrAudit and the hold named", err)
	}
	if diff := cmp.Diff([]string{holdCmd, attachCmd}, f.calls); diff != "" {
		t.Errorf("calls (-want +got): no requeue without its audit line\n%s", diff)
	}
	if len(*alarms) != 1 || !strings.Contains((*alarms)[0], "scontrol delete ReservationName=gangtopo_defrag_40") {
		t.Errorf("alarms %q, want one saying how to end the hold by hand", *alarms)
	}
}

// A re-check that took half of orphanGrace gives the plan up: Tend, in
// the controller, may by then take the hold for an orphan and end it, and
// no job may be requeued without its hold.
func TestCarryGivesUpAfterASlowRecheck(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING"}}
	x, _ := testExecutor(t, f)
	now := time.Now()
	x.Now = func() time.Time { return now }
	pr := proposal("12")
	_, err := x.Carry(context.Background(), pr, func(context.Context) (*Proposal, bool, error) {
		now = now.Add(orphanGrace / 2) // slurmctld is slow
		return pr, true, nil
	})
	var se *StaleError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "took 30s") {
		t.Fatalf("err %v, want a stale plan after a 30 s re-check", err)
	}
	if diff := cmp.Diff([]string{holdCmd, attachCmd, detachCmd, deleteCmd}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
