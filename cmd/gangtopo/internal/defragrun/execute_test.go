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

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// fakeSlurm records the commands it is given and answers from states.
type fakeSlurm struct {
	calls  []string
	states map[string]string // job -> state; absent: unknown
	fail   map[string]error  // command prefix -> error
	holds  []Hold
	// onRequeue, when set, is the state a job has after its requeue.
	onRequeue string
}

func (f *fakeSlurm) do(call string) error {
	f.calls = append(f.calls, call)
	for prefix, err := range f.fail {
		if strings.HasPrefix(call, prefix) {
			return err
		}
	}
	return nil
}

func (f *fakeSlurm) Hold(_ context.Context, name, nodes, user string, d time.Duration) error {
	return f.do(fmt.Sprintf("hold %s %s %s %s", name, nodes, user, d))
}
func (f *fakeSlurm) Attach(_ context.Context, id, name string) error {
	return f.do("attach " + id + " " + name)
}
func (f *fakeSlurm) Detach(_ context.Context, id string) error { return f.do("detach " + id) }
func (f *fakeSlurm) Unhold(_ context.Context, name string) error {
	err := f.do("unhold " + name)
	if err == nil {
		var kept []Hold // a new slice: a caller may be ranging over the old one
		for _, h := range f.holds {
			if h.Name != name {
				kept = append(kept, h)
			}
		}
		f.holds = kept
	}
	return err
}
func (f *fakeSlurm) Requeue(_ context.Context, id string) error {
	err := f.do("requeue " + id)
	if err == nil && f.onRequeue != "" {
		f.states[id] = f.onRequeue
	}
	return err
}
func (f *fakeSlurm) Eligible(_ context.Context, id string) error { return f.do("eligible " + id) }
func (f *fakeSlurm) Pin(_ context.Context, id, nodes string) error {
	return f.do("pin " + id + " " + nodes)
}
func (f *fakeSlurm) Job(_ context.Context, id string) (string, string, bool, error) {
	st, ok := f.states[id]
	return st, "Resources", ok, nil
}
func (f *fakeSlurm) Holds(context.Context) ([]Hold, error) { return f.holds, nil }

func testExecutor(t *testing.T, f *fakeSlurm) (*Executor, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "defrag.log")
	cfg := ctld.DefaultDefrag()
	cfg.Timeout = 50 * time.Millisecond
	return &Executor{Slurm: f, Audit: Audit{Path: log}, Cfg: cfg, By: "test", Now: time.Now, Poll: time.Millisecond}, log
}

func proposal(victims ...string) *Proposal {
	pr := &Proposal{Gang: Gang{Job: slurmstate.PendingJob{ID: "40", User: "alice"}}, Domain: "leaf2", GangNode: "node[05-08]"}
	pr.Gang.Request.GPUs = 32
	for _, v := range victims {
		pr.Victims = append(pr.Victims, Victim{ID: v, GPUs: 1, Nodes: "node06", Lost: 0.5})
	}
	return pr
}

func TestCarryHoldsThenRequeuesWhatBothPlansName(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING", "13": "RUNNING"}, onRequeue: "PENDING"}
	x, log := testExecutor(t, f)
	// the plan names 12 and 13; by the re-check 13 has ended: only 12
	out, err := x.Carry(context.Background(), proposal("12", "13"), func(context.Context) (*Proposal, bool, error) {
		return proposal("12"), true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"hold gangtopo_defrag_40 node[05-08] alice 10m0s", // the room is held first,
		"attach 40 gangtopo_defrag_40",                    // the gang attached,
		"requeue 12",                                      // then what both plans name,
		"eligible 12",                                     // made eligible at once
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"12"}, out.Requeued); diff != "" {
		t.Errorf("requeued (-want +got):\n%s", diff)
	}
	h, bad, err := x.Audit.History(time.Now(), time.Hour)
	if err != nil || bad != 0 {
		t.Fatal(err, bad)
	}
	hour, lost := h.Spent(time.Now(), x.Cfg.Limits)
	data, _ := os.ReadFile(log)
	if hour != 1 || lost != 0.5 || !h.Protected("40", time.Now(), x.Cfg.Limits) || strings.Count(string(data), "\n") != 3 {
		t.Errorf("audit: %d requeues, %g lost, gang protected %v; log:\n%s", hour, lost, h.Protected("40", time.Now(), x.Cfg.Limits), data)
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
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "also need job(s) 14") {
		t.Fatalf("err = %v, want a stale plan naming job 14", err)
	}
	want := []string{"hold gangtopo_defrag_40 node[05-08] alice 10m0s", "attach 40 gangtopo_defrag_40", "detach 40", "unhold gangtopo_defrag_40"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got): nothing may be requeued\n%s", diff)
	}
}

func TestCarryStopsWhenARequeueIsRefused(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "PENDING", "12": "RUNNING", "13": "RUNNING"},
		fail: map[string]error{"requeue 13": errors.New("scontrol requeue 13: exit status 1: Requested operation is presently disabled")}}
	x, _ := testExecutor(t, f)
	x.Cfg.Expedite = false
	pr := proposal("12", "13")
	out, err := x.Carry(context.Background(), pr, func(context.Context) (*Proposal, bool, error) { return pr, true, nil })
	if err == nil || out == nil || len(out.Requeued) != 1 {
		t.Fatalf("err %v, outcome %+v: want a failure after job 12", err, out)
	}
	want := []string{"hold gangtopo_defrag_40 node[05-08] alice 10m0s", "attach 40 gangtopo_defrag_40", "requeue 12", "requeue 13", "detach 40", "unhold gangtopo_defrag_40"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// The hold ends with the gang detached first: a reservation deleted (or
// ended) while the gang runs inside would end the gang.
func TestReleaseDetachesTheRunningGangFirst(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "RUNNING"}}
	x, _ := testExecutor(t, f)
	if err := x.Release(context.Background(), "40", "gangtopo_defrag_40", time.Second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"detach 40", "unhold gangtopo_defrag_40"}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f2 := &fakeSlurm{states: map[string]string{"41": "PENDING"}}
	x2, _ := testExecutor(t, f2)
	if err := x2.Release(context.Background(), "41", "gangtopo_defrag_41", 20*time.Millisecond); !errors.Is(err, ErrNotStarted) {
		t.Errorf("a gang that does not start: %v, want ErrNotStarted", err)
	}
	if diff := cmp.Diff([]string{"detach 41", "unhold gangtopo_defrag_41"}, f2.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestTend(t *testing.T) {
	now := time.Now()
	f := &fakeSlurm{states: map[string]string{"40": "RUNNING", "41": "PENDING", "42": "PENDING", "43": "COMPLETED"},
		holds: []Hold{{Name: "gangtopo_defrag_40", End: now.Add(5 * time.Minute)}, {Name: "gangtopo_defrag_41", End: now.Add(5 * time.Minute)},
			{Name: "gangtopo_defrag_42", End: now.Add(5 * time.Second)}, {Name: "gangtopo_defrag_43"}, {Name: "gangtopo_defrag_44"}}}
	x, _ := testExecutor(t, f)
	kept, err := x.Tend(context.Background(), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// 40 runs: released; 41 waits with time left: kept; 42's hold runs
	// out: given up; 43 completed and 44 is gone: holds deleted
	want := []string{"detach 40", "unhold gangtopo_defrag_40", "detach 42", "unhold gangtopo_defrag_42", "unhold gangtopo_defrag_43", "unhold gangtopo_defrag_44"}
	if diff := cmp.Diff(want, f.calls); diff != "" || kept != 1 {
		t.Errorf("kept %d (want 1), calls (-want +got):\n%s", kept, diff)
	}
}

// EndAll ends every hold whatever its gang does (a controller stopping for
// good), each gang taken out first, and says which holds are still there.
func TestEndAll(t *testing.T) {
	f := &fakeSlurm{states: map[string]string{"40": "RUNNING", "41": "PENDING"},
		holds: []Hold{{Name: "gangtopo_defrag_40"}, {Name: "gangtopo_defrag_41"}, {Name: "gangtopo_defrag_45"}},
		fail:  map[string]error{"unhold gangtopo_defrag_41": errors.New("Reservation request busy")}}
	x, log := testExecutor(t, f)
	left, err := x.EndAll(context.Background(), "gangtopo was removed")
	if err != nil {
		t.Fatal(err)
	}
	// 40 runs and 41 waits: both taken out first; 45 is gone: only its
	// reservation; 41's delete fails, so its hold is left
	want := []string{"detach 40", "unhold gangtopo_defrag_40", "detach 41", "unhold gangtopo_defrag_41", "unhold gangtopo_defrag_45"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gangtopo_defrag_41"}, left); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	data, _ := os.ReadFile(log)
	if n := strings.Count(string(data), `"reason":"gangtopo was removed"`); n != 3 {
		t.Errorf("%d audit lines give the reason, want 3:\n%s", n, data)
	}

	none := &fakeSlurm{}
	x, _ = testExecutor(t, none)
	if left, err := x.EndAll(context.Background(), "gone"); err != nil || left != nil || len(none.calls) != 0 {
		t.Errorf("no holds: left %v, err %v, calls %v; want nothing done", left, err, none.calls)
	}
}

func TestParseHolds(t *testing.T) {
	out := "ReservationName=maint StartTime=2026-12-03T18:32:09 EndTime=2026-12-03T18:42:09 Nodes=node01\n" +
		"ReservationName=gangtopo_defrag_40 StartTime=2026-12-03T18:32:09 EndTime=2026-12-03T18:42:09 Duration=00:10:00 Nodes=node[05-08] NodeCnt=4 Flags=IGNORE_JOBS,SPEC_NODES Users=root State=ACTIVE\n"
	got := ParseHolds(out)
	want := []Hold{{Name: "gangtopo_defrag_40", Nodes: "node[05-08]", Users: "root", End: time.Date(2026, 12, 3, 18, 42, 9, 0, time.Local)}}
	if diff := cmp.Diff(want, got); diff != "" || got[0].Gang() != "40" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(ParseHolds("No reservations in the system\n")) != 0 {
		t.Error("read a hold from nothing")
	}
}

func TestCheckpoint(t *testing.T) {
	cases := []struct {
		comment string
		at      time.Time
		sigterm bool
	}{
		{"", time.Time{}, false},
		{"resnet GANGTOPO_CHECKPOINT=2026-12-01T10:00:00Z", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), false},
		{"GANGTOPO_CHECKPOINT=1796199159", time.Unix(1796199159, 0).UTC(), false},
		{"GANGTOPO_CHECKPOINT=SIGTERM", time.Time{}, true},
		{"GANGTOPO_CHECKPOINT=yesterday", time.Time{}, false},
	}
	for _, c := range cases {
		at, sig := Checkpoint(c.comment)
		if !at.Equal(c.at) || sig != c.sigterm {
			t.Errorf("Checkpoint(%q) = %v, %v; want %v, %v", c.comment, at, sig, c.at, c.sigterm)
		}
	}
}
