package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
)

// Wakes: a cycle at the moment a gang ends, before Slurm may start it
// again.
//
// A gang requeued after a node failure is re-bound during a cycle; the
// cycle may come up to an interval after the requeue, and under Slurm's
// expedited requeue (25.11+) the gang may start at once, with the binding
// it ran with: its domain's spares excluded and a member down, so it does
// not fit there, and Slurm's backfill hands the nodes it left to other
// jobs. Slurm runs slurm.conf's EpilogSlurmctld on the controller's host
// when a job ends, a requeue included, and finishes the requeue only when
// it has returned: meanwhile the job is listed pending with the COMPLETING
// flag, its old nodes still its own (under an expedited requeue no other
// job may start on them). `gangtopo wake` run there (docs/admin.md) asks
// the controller, over a Unix socket only its own user may open, for a
// cycle now and waits for it: the cycle reads Slurm's JSON, finds the gang
// being requeued (State.Requeuing) and re-binds it by the rules every
// re-binding follows (failure.go, the door); when the hook returns, Slurm
// finishes the requeue and the gang starts with its new binding. A wake
// for a job that cycle saw being requeued is answered no sooner than
// actuate.RequeueMargin after it came: the requeue's kill came before the
// hook, and a job restarted in the kill's second is refused by slurmd and
// killed for good on 22.05 (actuate/restart.go; 26.05.5 was seen not to,
// the margin is kept on every series).
//
// What a wake may do: ask for one cycle sooner, nothing else. The job it
// names (EpilogSlurmctld's SLURM_JOB_ID) only filters: every job's end
// runs the hook, and a cycle costs slurmctld a node and a job listing, so
// one is asked for only when that job ran at the last poll on two nodes
// or more with a gangtopo decision (a gang: a one-node job restarts on any
// node, and the next ordinary cycle re-binds it); the cycle itself acts on
// what Slurm's JSON says. Cycles stay at most one a second
// (daemon.MinWakeGap), and none is asked for while the cycles back off
// after a failure or are spaced out to hold the controller's share of
// slurmctld's RPC time (--max-rpc-share). A wake with no job asks for a
// cycle whatever ran (an administrator's "poll now"). Every wake waits at
// most WakeSetup.Timeout; the hook itself gives up sooner if told
// (gangtopo wake --timeout), so a slow controller holds a requeue that
// long at most, and the job's end no longer.

// WakeSetup turns the wake socket on: Path is the Unix socket; Wake asks
// the daemon loop for a cycle (daemon.Daemon.Wake: why it would not, or
// ""); Timeout bounds the wait for the duties of that cycle.
type WakeSetup struct {
	Path    string
	Wake    func() (refused string)
	Timeout time.Duration
}

// wakeReadTimeout bounds the wait for a wake's request line.
const wakeReadTimeout = 2 * time.Second

// maxWakeLine bounds a wake's request line.
const maxWakeLine = 256

// maxWakeConns bounds the wakes served at once: more are answered busy.
const maxWakeConns = 64

// jobIDPattern is what a wake may name: a Slurm job ID.
var jobIDPattern = regexp.MustCompile(`^[0-9]{1,10}$`)

// WakeJobID says whether id is a job a wake may name.
func WakeJobID(id string) bool { return jobIDPattern.MatchString(id) }

// AskWake is the other end of the socket (gangtopo wake): it sends one
// request line, for job (empty: none), and returns the controller's
// one-line answer, waiting timeout at most.
func AskWake(path, job string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return "", fmt.Errorf("no controller answers on %s (is it running with --wake-socket %s, on this host?): %v", path, path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	req := "wake"
	if job != "" {
		req += " " + job
	}
	if _, err := fmt.Fprintln(conn, req); err != nil {
		return "", fmt.Errorf("writing to %s: %v", path, err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, 1024)).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no answer from the controller within %s: %v", timeout, err)
	}
	return strings.TrimSpace(line), nil
}

// wakeServer serves the wake socket.
type wakeServer struct {
	c     *Controller
	setup WakeSetup
	ln    net.Listener
	slots chan struct{}
	wg    sync.WaitGroup
}

// listenWake opens the wake socket: a stale one left by a controller that
// is gone is replaced; one a running controller answers on is not, nor a
// file that is not a socket.
func listenWake(c *Controller, setup WakeSetup) (*wakeServer, error) {
	if fi, err := os.Lstat(setup.Path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("--wake-socket %s: exists and is not a socket: remove it or name another path", setup.Path)
		}
		if conn, err := net.DialTimeout("unix", setup.Path, time.Second); err == nil {
			conn.Close()
			return nil, fmt.Errorf("--wake-socket %s: another controller answers on it", setup.Path)
		}
		if err := os.Remove(setup.Path); err != nil {
			return nil, fmt.Errorf("--wake-socket %s: removing the stale socket: %w", setup.Path, err)
		}
	}
	ln, err := net.Listen("unix", setup.Path)
	if err != nil {
		return nil, fmt.Errorf("--wake-socket: %w", err)
	}
	// only this user (the controller's, SlurmUser where EpilogSlurmctld
	// runs) and root may connect
	if err := os.Chmod(setup.Path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--wake-socket %s: %w", setup.Path, err)
	}
	if setup.Timeout <= 0 {
		setup.Timeout = 30 * time.Second
	}
	w := &wakeServer{c: c, setup: setup, ln: ln, slots: make(chan struct{}, maxWakeConns)}
	w.wg.Add(1)
	go w.serve()
	return w, nil
}

// close stops serving and removes the socket.
func (w *wakeServer) close() {
	w.ln.Close()
	w.wg.Wait()
}

func (w *wakeServer) serve() {
	defer w.wg.Done()
	for {
		conn, err := w.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				w.c.log.Error().Err(err).Msg("wake socket: accept failed; wakes are off until the controller restarts")
			}
			return
		}
		select {
		case w.slots <- struct{}{}:
		default:
			fmt.Fprintln(conn, "busy: too many wakes at once; the next cycle comes at its interval")
			conn.Close()
			continue
		}
		w.wg.Add(1)
		go func() {
			defer func() { <-w.slots; w.wg.Done() }()
			w.handle(conn)
		}()
	}
}

// handle reads one request line ("wake" or "wake JOBID") and answers
// one line: "ok ...", "skipped: ...", "timeout: ..." or "error: ...".
func (w *wakeServer) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(wakeReadTimeout))
	_ = conn.SetWriteDeadline(time.Now().Add(wakeReadTimeout + w.setup.Timeout + time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, maxWakeLine)).ReadString('\n')
	if err != nil {
		fmt.Fprintln(conn, "error: want one line: wake [JOBID]")
		return
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "wake" || len(fields) > 2 || len(fields) == 2 && !WakeJobID(fields[1]) {
		fmt.Fprintf(conn, "error: %q: want one line: wake [JOBID] (a Slurm job ID, digits)\n", strings.TrimSpace(line))
		return
	}
	job := ""
	if len(fields) == 2 {
		job = fields[1]
		if !w.c.ranDecided(job) {
			fmt.Fprintf(conn, "skipped: job %s did not run on two nodes or more with a gangtopo decision at the last poll\n", job)
			return
		}
	}
	asked := w.c.now()
	if why := w.setup.Wake(); why != "" {
		w.c.log.Info().Str("job", job).Str("why", why).Msg("wake refused: no cycle sooner")
		fmt.Fprintf(conn, "skipped: %s\n", why)
		return
	}
	w.c.log.Info().Str("job", job).Msg("woken (EpilogSlurmctld or gangtopo wake): a cycle now")
	ctx, cancel := context.WithTimeout(context.Background(), w.setup.Timeout)
	defer cancel()
	if err := w.c.duties.roundsAfter(ctx, asked); err != nil {
		fmt.Fprintf(conn, "timeout: no duty round on a poll after the wake within %s\n", w.setup.Timeout)
		return
	}
	if job != "" && w.c.duties.rounds.sawRequeuing(job) {
		// the kill came before the hook: Slurm may restart the job as soon
		// as the hook returns (an expedited requeue), and a restart in the
		// kill's second may be refused by slurmd and the job killed for
		// good (actuate/restart.go)
		if wait := time.Until(asked.Add(actuate.RequeueMargin)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		fmt.Fprintf(conn, "ok: a cycle polled after the wake has run its duties; the requeue held %s after the wake\n", actuate.RequeueMargin)
		return
	}
	fmt.Fprintln(conn, "ok: a cycle polled after the wake has run its duties")
}

// ranDecided says whether job id ran with a gangtopo decision at the last
// poll.
func (c *Controller) ranDecided(id string) bool {
	m := c.decidedRunning.Load()
	return m != nil && (*m)[id]
}

// rounds tells waiters when a duty round ends (roundsAfter).
type rounds struct {
	mu sync.Mutex
	// at is when the jobs of the last round that ended were read; ended is
	// closed when the next round ends
	at    time.Time
	ended chan struct{}
	// requeuing are the jobs that round saw Slurm requeueing
	requeuing map[string]bool
}

// finished records a round on jobs read at at, which saw Slurm requeueing
// the jobs requeuing.
func (r *rounds) finished(at time.Time, requeuing map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at.After(r.at) {
		r.at, r.requeuing = at, requeuing
	}
	if r.ended != nil {
		close(r.ended)
		r.ended = nil
	}
}

// sawRequeuing says whether the last round saw Slurm requeueing job id.
func (r *rounds) sawRequeuing(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requeuing[id]
}

// roundsAfter waits until a round on jobs read at or after t has ended.
func (d *duties) roundsAfter(ctx context.Context, t time.Time) error {
	r := &d.rounds
	for {
		r.mu.Lock()
		if !r.at.Before(t) {
			r.mu.Unlock()
			return nil
		}
		if r.ended == nil {
			r.ended = make(chan struct{})
		}
		ch := r.ended
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
