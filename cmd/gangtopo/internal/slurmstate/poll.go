package slurmstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Source is one Slurm command the poller can read.
type Source uint8

// The sources. A poll reads one node source and one job source.
const (
	SinfoJSON         Source = iota // sinfo --json
	SqueueJSON                      // squeue --json
	ScontrolNodes                   // scontrol -a -d -o show node
	ScontrolJobs                    // scontrol -a -d show job
	ScontrolNodesJSON               // scontrol -a --json show nodes (Slurm 23.02 and later)
	Sdiag                           // sdiag: slurmctld's RPC counters (not a poll source: sdiag.go)
	numSources
)

var sourceArgs = [numSources][]string{
	{"sinfo", "--json"},
	{"squeue", "--json"},
	// -a: nodes and jobs of hidden partitions hold GPUs too; -d: GresUsed
	// and the per-node job lines; -o: one line per node.
	{"scontrol", "-a", "-d", "-o", "show", "node"},
	{"scontrol", "-a", "-d", "show", "job"},
	{"scontrol", "-a", "--json", "show", "nodes"},
	{"sdiag"},
}

// String is the command line, as errors and logs name it.
func (s Source) String() string { return strings.Join(sourceArgs[s], " ") }

// Label is a short metric label: sinfo, squeue, scontrol_nodes,
// scontrol_jobs, scontrol_nodes_json, sdiag.
func (s Source) Label() string {
	return [numSources]string{"sinfo", "squeue", "scontrol_nodes", "scontrol_jobs", "scontrol_nodes_json", "sdiag"}[s]
}

// Sources lists every source a poll reads (not Sdiag).
func Sources() []Source {
	return []Source{SinfoJSON, SqueueJSON, ScontrolNodes, ScontrolJobs, ScontrolNodesJSON}
}

// IsNodeSource says whether s lists nodes.
func (s Source) IsNodeSource() bool {
	return s == SinfoJSON || s == ScontrolNodes || s == ScontrolNodesJSON
}

// MaxOutputBytes bounds what one command may print; squeue --json of a
// large busy cluster is tens of MB.
const MaxOutputBytes = 1 << 30

// PollConfig says how to read Slurm.
type PollConfig struct {
	// NodesFrom is SinfoJSON, ScontrolNodes or ScontrolNodesJSON; JobsFrom
	// SqueueJSON or ScontrolJobs.
	NodesFrom, JobsFrom Source
	// NodesAuto picks the JSON node source for the Slurm polled: NodesFrom
	// first (sinfo --json, which Slurm 22.05 has), and from the first poll
	// that finds sinfo --json listing groups of nodes (23.02 and later) on,
	// scontrol --json show nodes.
	NodesAuto bool
	// BinDir holds the Slurm commands; empty means $PATH.
	BinDir string
	// Timeout bounds each command (it and its children are killed).
	Timeout time.Duration
	// Files maps a source to a file holding its saved output, read instead
	// of running the command (tests, offline use).
	Files map[Source]string
	// JobsWait, when positive, lets a Poller's polls go on without a job
	// listing that is not back JobsWait after the poll started, with the
	// last one that is (jobsbehind.go); 0: every poll waits for its own.
	JobsWait time.Duration
}

// Validate checks the source choice.
func (c *PollConfig) Validate() error {
	if !c.NodesFrom.IsNodeSource() {
		return fmt.Errorf("nodes must come from %q, %q or %q, not %q", SinfoJSON, ScontrolNodesJSON, ScontrolNodes, c.NodesFrom)
	}
	if c.JobsFrom != SqueueJSON && c.JobsFrom != ScontrolJobs {
		return fmt.Errorf("jobs must come from %q or %q, not %q", SqueueJSON, ScontrolJobs, c.JobsFrom)
	}
	if c.Timeout <= 0 && len(c.Files) < 2 {
		return fmt.Errorf("command timeout must be positive")
	}
	return nil
}

// Describe says where a polled state came from, for a snapshot's "source"
// field: "slurm 22.05.8 (sinfo --json; squeue --json)".
func (st *State) Describe(cfg *PollConfig) string {
	v := st.Version
	if v == "" {
		v = "(release not given)"
	}
	return fmt.Sprintf("slurm %s (%s; %s)", v, st.NodesFrom, cfg.JobsFrom)
}

// Run records one command's (or file's) read.
type Run struct {
	Source   Source
	Duration time.Duration
	Bytes    int
	Err      error
}

// Poller reads Slurm poll after poll. It keeps each source's output buffer
// between polls: squeue --json of a large cluster is tens of MB, and
// growing a fresh buffer to that size every few seconds is most of the
// garbage a poll would otherwise make. Parsed values never alias the
// buffers.
type Poller struct {
	cfg  *PollConfig
	bufs [numSources]limitedBuffer
	// nodesFrom is the node source in use: cfg.NodesFrom, or what
	// NodesAuto switched to.
	nodesFrom Source
	// timeouts are each source's command timeout now (0: cfg.Timeout);
	// see nextTimeout.
	timeouts [numSources]time.Duration
	once     bool // a throwaway poller (Poll): no next poll to speak of
	// mu makes polls one at a time; jobs is the job listing running
	// beside them and lastJobs the last one back (JobsWait).
	mu             sync.Mutex
	jobs, lastJobs *jobsRead
}

// NewPoller returns a poller for cfg.
func NewPoller(cfg *PollConfig) *Poller { return &Poller{cfg: cfg, nodesFrom: cfg.NodesFrom} }

// Poll reads once with a throwaway Poller.
func Poll(ctx context.Context, cfg *PollConfig) (*State, []Run, error) {
	p := NewPoller(cfg)
	p.once = true
	return p.Poll(ctx)
}

// Poll reads the node and job sources, running the two commands at once
// (halving the wall time and the gap between their views), and parses each
// output as soon as it is there. Any failure (a command that fails, times
// out or prints what the parsers do not expect) is a *PollError naming the
// command; runs reports each read either way.
//
// With PollConfig.JobsWait the job listing runs beside the polls instead
// (jobsbehind.go), except in a throwaway poller's single poll.
func (p *Poller) Poll(ctx context.Context) (*State, []Run, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := p.cfg
	if cfg.JobsWait > 0 && !p.once {
		return p.pollBehind(ctx)
	}
	st := &State{}
	var runs [2]Run
	var errs [2]error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runs[1], errs[1] = p.readParse(ctx, cfg.JobsFrom, func(_ Source, out []byte) error { return parseJobs(cfg, out, st) })
	}()
	runs[0], errs[0] = p.readNodes(ctx, st)
	wg.Wait()
	for i, src := range []Source{st.NodesFrom, cfg.JobsFrom} {
		if errs[i] != nil {
			return nil, runs[:], pollError(cfg, src, errs[i])
		}
	}
	st.JobsFresh = true
	return st, runs[:], nil
}

// readNodes reads and parses the node source into st (st.NodesFrom says
// which). Under NodesAuto, sinfo --json listing groups of nodes means a
// Slurm of 23.02 or later: its nodes, from then on, come from scontrol
// --json show nodes.
func (p *Poller) readNodes(ctx context.Context, st *State) (Run, error) {
	parse := func(src Source, out []byte) error { return parseNodes(p.cfg, src, out, st) }
	st.NodesFrom = p.nodesFrom
	run, err := p.readParse(ctx, p.nodesFrom, parse)
	var grouped *groupedSinfoError
	if p.cfg.NodesAuto && errors.As(err, &grouped) {
		p.nodesFrom, st.NodesFrom = ScontrolNodesJSON, ScontrolNodesJSON
		run, err = p.readParse(ctx, p.nodesFrom, parse)
	}
	return run, err
}

// readParse reads one source and parses what it printed.
func (p *Poller) readParse(ctx context.Context, src Source, parse func(Source, []byte) error) (Run, error) {
	start := time.Now()
	out, err := p.read(ctx, src)
	run := Run{Source: src, Duration: time.Since(start), Bytes: len(out), Err: err}
	if err == nil {
		err = parse(src, out)
	}
	return run, err
}

func parseNodes(cfg *PollConfig, src Source, out []byte, st *State) (err error) {
	switch src {
	case SinfoJSON:
		st.Nodes, st.Version, err = ParseSinfoJSON(out, label(cfg, src))
	case ScontrolNodesJSON:
		st.Nodes, st.Version, err = ParseScontrolNodesJSON(out, label(cfg, src))
	default:
		st.Nodes, err = ParseScontrolNodes(out, label(cfg, src))
	}
	return err
}

func parseJobs(cfg *PollConfig, out []byte, st *State) (err error) {
	if cfg.JobsFrom == SqueueJSON {
		st.Decisions = Decisions{}
		st.Jobs, _, err = parseSqueueJSON(out, label(cfg, SqueueJSON), st.Decisions, pendingLists{&st.Pending, &st.Queued, &st.Requeuing})
		st.PendingListed = err == nil
	} else {
		st.Decisions = Decisions{}
		st.Jobs, st.Unreadable, err = parseScontrolJobs(out, label(cfg, ScontrolJobs), st.Decisions)
	}
	return err
}

// PollError is a failed read of one source: the command failed, timed out
// or printed what the parser does not accept, or (Input) a saved-output file
// the user named is unreadable or wrong. The message names the command.
type PollError struct {
	Source Source
	Input  bool
	Err    error
}

func (e *PollError) Error() string { return e.Err.Error() }
func (e *PollError) Unwrap() error { return e.Err }

func pollError(cfg *PollConfig, src Source, err error) error {
	_, input := cfg.Files[src]
	return &PollError{Source: src, Input: input, Err: err}
}

// label names a source in errors: the command, or the command and the file.
func label(cfg *PollConfig, src Source) string {
	if f, ok := cfg.Files[src]; ok {
		return fmt.Sprintf("%s output in %s", src, f)
	}
	return src.String()
}

func (p *Poller) read(ctx context.Context, src Source) ([]byte, error) {
	buf := &p.bufs[src]
	buf.Reset()
	buf.limit, buf.over = MaxOutputBytes, false
	if f, ok := p.cfg.Files[src]; ok {
		return readFile(f, src, buf)
	}
	timeout := p.timeouts[src]
	if timeout == 0 {
		timeout = p.cfg.Timeout
	}
	start := time.Now()
	out, err := runCommand(ctx, p.cfg, src, buf, timeout)
	p.timeouts[src] = nextTimeout(p.cfg.Timeout, timeout, time.Since(start), err)
	if errors.Is(err, errNoAnswer) && p.timeouts[src] > timeout && !p.once {
		err = fmt.Errorf("%w; the next poll waits up to %s for it", err, p.timeouts[src])
	}
	return out, err
}

// Command timeouts that follow the cluster. A command's time grows with
// what it lists: squeue --json of a large backlog outgrew the default on
// the scale lab's Slurm 26.05, and killing it every time meant no
// snapshot at all, while slurmctld still answered each call. So each source's timeout is three times what its last successful
// run took, never below the configured one (--slurm-timeout), and doubles
// after a run it killed, up to maxTimeoutGrowth times the configured one: a
// poll of a large backlog gets the time it needs, a slurmctld that is down
// still costs at most that (and the daemon's pacing spaces the tries out).

// maxTimeoutGrowth bounds a source's timeout, in configured timeouts.
const maxTimeoutGrowth = 8

// errNoAnswer is wrapped by a command's error when its timeout killed it.
var errNoAnswer = errors.New("no answer")

// nextTimeout is a source's timeout after a run that took took with
// timeout and ended with err; base is the configured timeout.
func nextTimeout(base, timeout, took time.Duration, err error) time.Duration {
	limit := maxTimeoutGrowth * base
	switch {
	case errors.Is(err, errNoAnswer):
		return min(2*timeout, limit)
	case err == nil:
		return min(max(3*took, base), limit)
	}
	return timeout
}

func readFile(path string, src Source, buf *limitedBuffer) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s output: %w", src, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < MaxOutputBytes {
		buf.Grow(int(fi.Size()) + 512)
	}
	_, err = io.Copy(buf, f)
	if buf.over {
		err = fmt.Errorf("larger than %d bytes", MaxOutputBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s output in %s: %w", src, path, err)
	}
	return buf.Bytes(), nil
}

// compactJSON asks Slurm's JSON commands (23.02 and later; earlier ones
// ignore it) for JSON without indentation: the same document, a good
// part smaller to print, pipe and read.
const compactJSON = "SLURM_JSON=compact"

// IsJSON says whether the source prints JSON.
func (s Source) IsJSON() bool { return s == SinfoJSON || s == SqueueJSON || s == ScontrolNodesJSON }

// runCommand runs a Slurm command in its own process group, so a timeout
// kills whatever it started too. Slurm's clients retry for about 10 s when
// slurmctld is down; the timeout is what keeps a poll bounded then.
func runCommand(ctx context.Context, cfg *PollConfig, src Source, stdout *limitedBuffer, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := sourceArgs[src]
	bin := args[0]
	if cfg.BinDir != "" {
		bin = filepath.Join(cfg.BinDir, bin)
	}
	observeCommand(args[0], args[1:])
	cmd := exec.CommandContext(ctx, bin, args[1:]...)
	if src.IsJSON() {
		cmd.Env = append(os.Environ(), compactJSON)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stderr := limitedBuffer{limit: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s: %w within %s (slurmctld down or overloaded?); killed", src, errNoAnswer, timeout)
	case stdout.over:
		return nil, fmt.Errorf("%s: printed more than %d bytes", src, MaxOutputBytes)
	case err != nil:
		return nil, fmt.Errorf("%s: %w%s%s", src, err, firstLine(stderr.Bytes()), jsonHint(src, stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// jsonHint explains a JSON command that fails for want of Slurm's JSON
// serializer ("fatal: Unable to find plugin: serializer/json"): Slurm
// builds it only where json-c is found, so a source build may lack it.
func jsonHint(src Source, stderr []byte) string {
	if !src.IsJSON() || !bytes.Contains(stderr, []byte("serializer/json")) {
		return ""
	}
	return " (this Slurm has no JSON serializer, serializer/json, which is built only with json-c: rebuild Slurm with json-c, or read the text outputs with --nodes-from scontrol --jobs-from scontrol)"
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	if len(line) == 0 {
		return ""
	}
	if len(line) > 300 {
		line = append(line[:300:300], "..."...)
	}
	return ": " + string(line)
}

// limitedBuffer keeps at most limit bytes and notes when more came.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.limit {
		b.over = true
		return 0, errors.New("output limit exceeded")
	}
	return b.Buffer.Write(p)
}
