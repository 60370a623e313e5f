package actuate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// fakeSlurm records the commands run and answers each command line with
// the errors queued for it, one a run (none left: success).
type fakeSlurm struct {
	ran  []string
	errs map[string][]error
}

func (f *fakeSlurm) run(_ context.Context, _ time.Duration, cmd string, args ...string) (string, error) {
	line := cmd + " " + strings.Join(args, " ")
	f.ran = append(f.ran, line)
	errs := f.errs[line]
	if len(errs) == 0 {
		return "", nil
	}
	f.errs[line] = errs[1:]
	return "", errs[0]
}

type leader bool

func (l leader) Lead(context.Context) (bool, string) { return bool(l), "not here" }

func requeue(job string) Change {
	return Change{Entry: Entry{Action: "requeue", Job: job, Duty: "defrag"}, Cmd: "scontrol", Args: []string{"requeue", job}}
}

// testDoor is a door over a fake Slurm, auditing into a temporary file,
// at a clock the test moves.
func testDoor(t *testing.T, cfg Config, lead bool) (*Door, *fakeSlurm, *time.Time) {
	t.Helper()
	f := &fakeSlurm{errs: map[string][]error{}}
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	d := NewDoor(f.run, Audit{Path: filepath.Join(t.TempDir(), "actions.log")}, leader(lead), "controller", cfg)
	d.Now = func() time.Time { return now }
	return d, f, &now
}

// TestDoorRefusesWithoutRunning: a dry run, a controller that does not
// lead and one switched off run nothing and write no audit line (switched
// off, a change that puts back what gangtopo made is still made); a dry
// run tells each change it would have made (Door.Log), so that it shows
// what gangtopo would do.
func TestDoorRefusesWithoutRunning(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		lead bool
		want error
		told []string // what Log was told: action, job, result
	}{
		{"dry run", Config{DryRun: true}, true, ErrDryRun, []string{"requeue 7 dry-run", "requeue 8 dry-run"}},
		{"not the leader", Config{}, false, ErrNotLeader, nil},
		{"switched off", Config{Off: true}, true, ErrOff, []string{"requeue 8 ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, _ := testDoor(t, tt.cfg, tt.lead)
			var told []string
			d.Log = func(e Entry) { told = append(told, e.Action+" "+e.Job+" "+e.Result) }
			d.Begin(context.Background())
			_, err := d.Do(context.Background(), requeue("7"))
			if !errors.Is(err, tt.want) || !Refused(err) {
				t.Fatalf("Do: %v, want %v", err, tt.want)
			}
			undo := requeue("8")
			undo.Undo = true
			_, err = d.Do(context.Background(), undo)
			if diff := cmp.Diff(tt.told, told); diff != "" {
				t.Errorf("told (-want +got):\n%s", diff)
			}
			if tt.want == ErrOff { // switched off, putting back is still done
				if err != nil || len(f.ran) != 1 {
					t.Fatalf("switched off, a change that puts back what gangtopo made: %v (ran %q), want it made", err, f.ran)
				}
				return
			}
			if len(f.ran) != 0 {
				t.Errorf("ran %q, want nothing", f.ran)
			}
			if changes, _, _ := d.audit.Changes(d.Now(), time.Hour); len(changes) != 0 {
				t.Errorf("audit has %d lines, want none", len(changes))
			}
		})
	}
}

// TestDoorAuditFirst: a change whose intent line cannot be written is not
// made; one that is made has its intent line, then its outcome line.
func TestDoorAuditFirst(t *testing.T) {
	d, f, _ := testDoor(t, Config{}, true)
	d.audit.Path = "/nonexistent/dir/actions.log"
	if _, err := d.Do(context.Background(), requeue("7")); !errors.Is(err, ErrAudit) {
		t.Fatalf("Do with an unwritable audit log: %v, want ErrAudit", err)
	}
	if len(f.ran) != 0 {
		t.Fatalf("ran %q without its audit line", f.ran)
	}

	d, f, _ = testDoor(t, Config{}, true)
	if _, err := d.Do(context.Background(), requeue("7")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(d.audit.Path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"result":"intent"`) || !strings.Contains(lines[1], `"result":"ok"`) {
		t.Fatalf("audit lines:\n%s\nwant an intent line, then ok", data)
	}
	if !strings.Contains(lines[0], `"command":"scontrol requeue 7"`) {
		t.Errorf("intent line %s does not name the command", lines[0])
	}
	if diff := cmp.Diff([]string{"scontrol requeue 7"}, f.ran); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
}

// TestDoorWritesTheAuditLineBeforeTheCommand: when the command runs, the
// audit log already holds its intent line (the runner reads the file):
// a process killed while the command runs leaves the change recorded, and
// counted by the limits (Audit.Changes).
func TestDoorWritesTheAuditLineBeforeTheCommand(t *testing.T) {
	undo := requeue("8")
	undo.Undo = true
	tests := []struct {
		name string
		cfg  Config
		c    Change
	}{
		{"a change", Config{}, requeue("7")},
		{"putting back while switched off", Config{Off: true}, undo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, _ := testDoor(t, tt.cfg, true)
			var seen []Entry // the audit log's last line as each command starts
			d.run = func(ctx context.Context, timeout time.Duration, cmd string, args ...string) (string, error) {
				data, err := os.ReadFile(d.audit.Path)
				if err != nil || len(data) == 0 {
					t.Fatalf("%s runs before any audit line (%v)", args, err)
				}
				lines := strings.Split(strings.TrimSpace(string(data)), "\n")
				var e Entry
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil {
					t.Fatal(err)
				}
				seen = append(seen, e)
				return f.run(ctx, timeout, cmd, args...)
			}
			ctx := context.Background()
			d.Begin(ctx)
			for range 2 { // the second after the first's outcome line
				if _, err := d.Do(ctx, tt.c); err != nil {
					t.Fatal(err)
				}
			}
			want := "scontrol requeue " + tt.c.Job
			if len(seen) != 2 {
				t.Fatalf("ran %d commands, want 2", len(seen))
			}
			for i, e := range seen {
				if e.Result != ResultIntent || e.Command != want || e.Job != tt.c.Job || e.Ref == "" {
					t.Errorf("command %d: the last audit line as it ran is %+v, want its intent (%q)", i, e, want)
				}
			}
			if seen[0].Ref == seen[1].Ref {
				t.Errorf("two changes share the ref %s", seen[0].Ref)
			}
		})
	}
}

func TestDoorMaxPerCycle(t *testing.T) {
	d, f, _ := testDoor(t, Config{MaxPerCycle: 2}, true)
	ctx := context.Background()
	d.Begin(ctx)
	var errs []string
	for _, job := range []string{"1", "2", "3"} {
		_, err := d.Do(ctx, requeue(job))
		errs = append(errs, fmt.Sprint(errors.Is(err, ErrLimit)))
	}
	if diff := cmp.Diff([]string{"false", "false", "true"}, errs); diff != "" {
		t.Errorf("limit hit (-want +got):\n%s", diff)
	}
	d.Begin(ctx) // a new cycle starts afresh
	if _, err := d.Do(ctx, requeue("3")); err != nil {
		t.Errorf("the next cycle: %v", err)
	}
	if len(f.ran) != 3 {
		t.Errorf("ran %d commands, want 3", len(f.ran))
	}
}

// answers is a leader whose answers change from one call to the next
// (the primary slurmctld moves to another host and back).
type answers struct {
	lead  []bool
	asked int
}

func (a *answers) Lead(context.Context) (bool, string) {
	l := a.lead[min(a.asked, len(a.lead)-1)]
	a.asked++
	return l, "the slurmctld in control runs elsewhere"
}

// TestDoorAsksTheLeaderEachCycle: every Begin asks the leader once, and
// the cycle's changes follow that answer: a controller that stopped
// leading makes nothing from its next cycle on, one that leads again acts.
func TestDoorAsksTheLeaderEachCycle(t *testing.T) {
	tests := []struct {
		name string
		lead []bool   // the leader's answer at each Begin
		want []string // per cycle, what became of its two changes
	}{
		{"leads, then not", []bool{true, false}, []string{"made made", "refused refused"}},
		{"not, then leads", []bool{false, true}, []string{"refused refused", "made made"}},
		{"leads, not, leads again", []bool{true, false, true}, []string{"made made", "refused refused", "made made"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := testDoor(t, Config{}, true)
			l := &answers{lead: tt.lead}
			d.leader = l
			ctx := context.Background()
			var got []string
			for cycle := range tt.lead {
				d.Begin(ctx)
				var out []string
				for _, job := range []string{"1", "2"} {
					_, err := d.Do(ctx, requeue(fmt.Sprint(cycle)+job))
					switch {
					case err == nil:
						out = append(out, "made")
					case errors.Is(err, ErrNotLeader):
						out = append(out, "refused")
					default:
						out = append(out, err.Error())
					}
				}
				got = append(got, strings.Join(out, " "))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if l.asked != len(tt.lead) {
				t.Errorf("the leader was asked %d times in %d cycles, want once a cycle", l.asked, len(tt.lead))
			}
		})
	}
}

// TestDoorRoom: what is left of the cycle's limit, so that a duty does not
// start a plan it could not finish: every change the door let through
// counts (made or failed: it ran), a refused one does not, and Begin
// starts afresh.
func TestDoorRoom(t *testing.T) {
	boom := errors.New("scontrol: error: Invalid job id specified")
	tests := []struct {
		name  string
		max   int
		fails []string // jobs whose requeue fails
		jobs  []string // requeued in order this cycle
		want  int
	}{
		{"no limit", 0, nil, []string{"1", "2"}, -1},
		{"nothing made yet", 3, nil, nil, 3},
		{"two of three made", 3, nil, []string{"1", "2"}, 1},
		// 2 failed, but it ran: it counts
		{"a failed change counts", 3, []string{"2"}, []string{"1", "2"}, 1},
		// the fourth is refused (the limit) and does not count
		{"all made, one refused", 3, nil, []string{"1", "2", "3", "4"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, f, _ := testDoor(t, Config{MaxPerCycle: tt.max}, true)
			for _, j := range tt.fails {
				f.errs["scontrol requeue "+j] = []error{boom}
			}
			ctx := context.Background()
			d.Begin(ctx)
			for _, j := range tt.jobs {
				_, _ = d.Do(ctx, requeue(j)) // the room is what is checked
			}
			if got := d.Room(); got != tt.want {
				t.Errorf("Room() = %d, want %d", got, tt.want)
			}
			d.Begin(ctx)
			fresh := tt.max // a new cycle: the whole limit (none: -1)
			if fresh == 0 {
				fresh = -1
			}
			if got := d.Room(); got != fresh {
				t.Errorf("after Begin, Room() = %d, want %d", got, fresh)
			}
		})
	}
}

// TestDoorBacksOff: a change that failed for a job waits 30 s, then 60 s
// after a second failure; a success starts afresh; another job is not
// held back.
func TestDoorBacksOff(t *testing.T) {
	d, f, now := testDoor(t, Config{Backoff: 30 * time.Second, MaxBackoff: time.Minute}, true)
	ctx := context.Background()
	boom := errors.New("scontrol requeue 7: Job is not requeueable")
	f.errs["scontrol requeue 7"] = []error{boom, boom}
	steps := []struct {
		after time.Duration
		job   string
		want  string // "ran", "backoff" or "failed"
	}{
		{0, "7", "failed"}, // first failure: wait 30 s
		{10 * time.Second, "7", "backoff"},
		{0, "8", "ran"},                   // another job is not held back
		{25 * time.Second, "7", "failed"}, // 35 s: tried again, fails: wait 60 s
		{50 * time.Second, "7", "backoff"},
		{15 * time.Second, "7", "ran"}, // 65 s after: tried, succeeds
		{0, "7", "ran"},                // no back-off after a success
	}
	for i, s := range steps {
		*now = now.Add(s.after)
		d.Begin(ctx)
		_, err := d.Do(ctx, requeue(s.job))
		got := "ran"
		switch {
		case errors.Is(err, ErrBackoff):
			got = "backoff"
		case err != nil:
			got = "failed"
		}
		if got != s.want {
			t.Errorf("step %d (job %s at +%s): %s (%v), want %s", i, s.job, s.after, got, err, s.want)
		}
	}
}

// TestDoorBusyAfterTimeout: once a command runs out of time, the rest of
// the cycle makes no change (slurmctld is slow: the next would wait as
// long).
func TestDoorBusyAfterTimeout(t *testing.T) {
	d, f, _ := testDoor(t, Config{}, true)
	ctx := context.Background()
	f.errs["scontrol requeue 1"] = []error{fmt.Errorf("scontrol requeue: %w within 10s", slurmstate.ErrUpdateTimeout)}
	d.Begin(ctx)
	if _, err := d.Do(ctx, requeue("1")); !errors.Is(err, slurmstate.ErrUpdateTimeout) {
		t.Fatalf("first: %v", err)
	}
	if _, err := d.Do(ctx, requeue("2")); !errors.Is(err, ErrBusy) {
		t.Fatalf("second in the same cycle: %v, want ErrBusy", err)
	}
	d.Begin(ctx)
	if _, err := d.Do(ctx, requeue("2")); err != nil {
		t.Fatalf("next cycle: %v", err)
	}
}

// TestChangesCountsUnfinished: an intent without its outcome (the process
// died between the two) is counted as made; a finished one as it ended.
func TestChangesCountsUnfinished(t *testing.T) {
	a := Audit{Path: filepath.Join(t.TempDir(), "a.log")}
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, e := range []Entry{
		{Time: at, Ref: "a", Action: "requeue", Job: "1", Result: ResultIntent},
		{Time: at, Ref: "a", Action: "requeue", Job: "1", Result: ResultOK},
		{Time: at, Ref: "b", Action: "requeue", Job: "2", Result: ResultIntent},
		{Time: at, Ref: "c", Action: "requeue", Job: "3", Result: ResultIntent},
		{Time: at, Ref: "c", Action: "requeue", Job: "3", Result: "Job is not requeueable"},
		{Time: at.Add(-2 * time.Hour), Ref: "d", Action: "requeue", Job: "4", Result: ResultIntent}, // too old
	} {
		if err := a.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	got, bad, err := a.Changes(at.Add(time.Minute), time.Hour)
	if err != nil || bad != 0 {
		t.Fatalf("Changes: %v, %d bad", err, bad)
	}
	var results []string
	for _, e := range got {
		results = append(results, e.Job+":"+e.Result)
	}
	if diff := cmp.Diff([]string{"1:ok", "2:ok", "3:Job is not requeueable"}, results); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
