package controller

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// wakeLab is a wake server over a controller whose only state is what the
// wakes read: the jobs that ran decided and the duty rounds. Its Wake
// ends a round 50 ms later, on jobs read then, as the daemon's woken cycle
// would, which saw Slurm requeueing the jobs requeuing; refuse makes it
// refuse (backing off), stall makes it run none.
type wakeLab struct {
	c             *Controller
	w             *wakeServer
	path          string
	refuse, stall bool
	wakes         int
	requeuing     map[string]bool
}

func newWakeLab(t *testing.T, timeout time.Duration) *wakeLab {
	t.Helper()
	l := &wakeLab{path: filepath.Join(t.TempDir(), "controller.sock")}
	l.c = &Controller{log: zerolog.Nop(), now: time.Now, duties: &duties{}}
	l.c.decidedRunning.Store(&map[string]bool{"42": true})
	wake := func() string {
		if l.refuse {
			return "the cycles back off after a failed one"
		}
		l.wakes++
		if !l.stall {
			go func() { time.Sleep(50 * time.Millisecond); l.c.duties.rounds.finished(time.Now(), l.requeuing) }()
		}
		return ""
	}
	var err error
	if l.w, err = listenWake(l.c, WakeSetup{Path: l.path, Wake: wake, Timeout: timeout}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.w.close)
	return l
}

// ask sends one line and returns the answer.
func (l *wakeLab) ask(t *testing.T, line string) string {
	t.Helper()
	conn, err := net.Dial("unix", l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, line)
	_ = conn.(*net.UnixConn).CloseWrite()
	answer, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(answer)
}

func TestWakeAnswers(t *testing.T) {
	l := newWakeLab(t, time.Second)
	if fi, err := os.Stat(l.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v mode %v; want 0600", err, fi.Mode())
	}
	for _, tt := range []struct {
		line, want    string
		refuse, stall bool
		wakes         int
	}{
		{"wake 42\n", "ok:", false, false, 1},
		{"wake\n", "ok:", false, false, 1},
		{"wake 7\n", "skipped: job 7 did not run on two nodes or more with a gangtopo decision", false, false, 0},
		{"wake 42\n", "skipped: the cycles back off", true, false, 0},
		{"wake 42\n", "timeout:", false, true, 1},
		{"wake 4x2\n", "error:", false, false, 0},
		{"sleep 42\n", "error:", false, false, 0},
		{"wake 42 43\n", "error:", false, false, 0},
		{"wake 42", "error:", false, false, 0}, // no end of line
		{strings.Repeat("x", 4096) + "\n", "error:", false, false, 0},
	} {
		l.refuse, l.stall, l.wakes = tt.refuse, tt.stall, 0
		if got := l.ask(t, tt.line); !strings.HasPrefix(got, tt.want) || l.wakes != tt.wakes {
			t.Errorf("%.20q (refuse %v, stall %v): answer %q, %d wakes; want %q..., %d", tt.line, tt.refuse, tt.stall, got, l.wakes, tt.want, tt.wakes)
		}
	}
}

// A wake for a job the woken round saw Slurm requeueing is answered no
// sooner than actuate.RequeueMargin after it came: Slurm may restart the
// job once the hook returns, and a restart in the second of the requeue's
// kill would be killed for good. Any other is answered when the round
// ends.
func TestWakeHoldsARequeueTwoSeconds(t *testing.T) {
	l := newWakeLab(t, 5*time.Second)
	l.requeuing = map[string]bool{"42": true}
	start := time.Now()
	if got := l.ask(t, "wake 42\n"); !strings.HasPrefix(got, "ok:") || !strings.Contains(got, "held 2s") || time.Since(start) < actuate.RequeueMargin {
		t.Errorf("answer %q after %v; want ok, held %v", got, time.Since(start), actuate.RequeueMargin)
	}
	l.requeuing = nil
	start = time.Now()
	if got := l.ask(t, "wake 42\n"); !strings.HasPrefix(got, "ok:") || time.Since(start) >= time.Second {
		t.Errorf("answer %q after %v; want ok at once (not requeued)", got, time.Since(start))
	}
}

// A round on jobs read before the wake does not answer it: only one on a
// poll after it.
func TestWakeWaitsForALaterPoll(t *testing.T) {
	l := newWakeLab(t, 2*time.Second)
	l.stall = true
	before := time.Now()
	done := make(chan string)
	go func() {
		answer, err := AskWake(l.path, "42", 2*time.Second)
		if err != nil {
			answer = err.Error()
		}
		done <- answer
	}()
	time.Sleep(100 * time.Millisecond)
	l.c.duties.rounds.finished(before, nil) // a round on an older poll ends
	select {
	case got := <-done:
		t.Fatalf("answered %q after a round on a poll before the wake", got)
	case <-time.After(200 * time.Millisecond):
	}
	l.c.duties.rounds.finished(time.Now(), nil)
	if got := <-done; !strings.HasPrefix(got, "ok:") {
		t.Errorf("answer %q after a later round; want ok", got)
	}
}

// The socket: a stale one is replaced, a live one or a file that is not a
// socket is not.
func TestListenWake(t *testing.T) {
	l := newWakeLab(t, time.Second)
	c := &Controller{log: zerolog.Nop(), now: time.Now, duties: &duties{}}
	if _, err := listenWake(c, WakeSetup{Path: l.path, Wake: func() string { return "" }}); err == nil || !strings.Contains(err.Error(), "another controller answers") {
		t.Errorf("a second server on a live socket: %v", err)
	}
	file := filepath.Join(t.TempDir(), "not-a-socket")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := listenWake(c, WakeSetup{Path: file, Wake: func() string { return "" }}); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	if data, _ := os.ReadFile(file); string(data) != "keep me" {
		t.Errorf("the regular file was changed: %q", data)
	}
	stale := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a controller that died: its socket file stays
	w, err := listenWake(c, WakeSetup{Path: stale, Wake: func() string { return "" }})
	if err != nil {
		t.Fatalf("a stale socket: %v", err)
	}
	w.close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("socket left after close: %v", err)
	}
}

// The wakes' filter: gangs that run on two nodes or more with a gangtopo
// decision; not a one-node job, a job without a decision, nor one pending.
func TestNoteDecidedRunning(t *testing.T) {
	decision := "gangtopo v1 placed request=leaf:required gpus=16 shape=2x8 domain=leaf2 tier=leaf bound=leaf2 snapshot=1: placed in leaf leaf2 on node05:0-7,node06:0-7"
	two := []slurmstate.JobNode{{Name: "node05"}, {Name: "node06"}}
	job := func(id, state, comment string, nodes []slurmstate.JobNode) slurmstate.Job {
		j := slurmstate.Job{ID: id, State: state, Nodes: nodes}
		j.Facts.AdminComment = comment
		return j
	}
	st := &slurmstate.State{Jobs: []slurmstate.Job{
		job("1", "RUNNING", decision, two),
		job("2", "RUNNING", decision, two[:1]),
		job("3", "RUNNING", "", two),
		job("4", "COMPLETING", decision, two),
	}}
	c := &Controller{}
	c.noteDecidedRunning(st)
	for id, want := range map[string]bool{"1": true, "2": false, "3": false, "4": false, "5": false} {
		if got := c.ranDecided(id); got != want {
			t.Errorf("job %s: %v, want %v", id, got, want)
		}
	}
}
