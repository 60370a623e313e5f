package slurmscale

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// The controller daemon (`gangtopo daemon --role controller`) runs beside
// the lab as a site runs it: every 5 s it polls Slurm and publishes the
// snapshot the plugin reads; its duties (re-binding, defragmentation,
// quotas) run in their own loop and change Slurm through the door. It runs
// as a user of its own where it can (the slurm user, made an
// administrator in Slurm's accounting), so that sdiag's statistics by user
// tell its RPCs from everyone else's; without accounting it runs as root,
// and its share is told by message type instead (Window).
//
// What it costs is read from its own debug log (one line per poll, with
// each command's time and size, and one per duty round, with each duty's
// time and the changes made) and from /proc: its own CPU time and that of
// the Slurm commands it ran (a process's waited-for children).

// controllerRPCs are the message types the controller sends: its poll
// (sinfo/squeue --json, scontrol show nodes), its checks (ping, show
// config; sdiag with --max-rpc-share: the harness's own sdiag before and
// after a window adds one at most) and its changes (updates, requeues,
// reservations).
var controllerRPCs = []string{"REQUEST_JOB_INFO", "REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO", "REQUEST_UPDATE_JOB",
	"REQUEST_BUILD_INFO", "REQUEST_PING", "REQUEST_JOB_REQUEUE", "REQUEST_CREATE_RESERVATION", "REQUEST_UPDATE_RESERVATION",
	"REQUEST_DELETE_RESERVATION", "REQUEST_RESERVATION_INFO", "REQUEST_JOB_INFO_SINGLE", "REQUEST_CONTROL_STATUS",
	"REQUEST_STATS_INFO"}

// controller is a running controller daemon.
type controller struct {
	cmd      *exec.Cmd
	log      string // its standard error: the JSON log
	audit    string
	user     string // who it runs as
	logAt    int64  // log offset at the window's start
	auditAt  int64
	cpuStart cpuTimes
	exited   chan struct{}
}

// slurmUID is the slurm user Debian's packages make (the same in the
// host's and the roots' /etc/passwd).
const slurmUID = 64030

// startController starts the daemon: bin the gangtopo binary, dir its
// state directory (snapshot, audit log, lock), cluster and config the
// files it reads; asSlurm runs it as the slurm user; maxShare is its
// --max-rpc-share (0: off).
func startController(lab *slurmlab.Lab, bin, dir, cluster, config, snapshot string, asSlurm bool, maxShare float64) (*controller, error) {
	c := &controller{log: filepath.Join(dir, "controller.log"), audit: filepath.Join(dir, "audit.log"), user: "root", exited: make(chan struct{})}
	// appended to: the run starts it again after each window without it
	out, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	c.cmd = exec.Command(bin, "daemon", "--role", "controller", "--topology", cluster, "-o", snapshot, "--config", config,
		"--interval", "5s", "--log-level", "debug", "--max-rpc-share", strconv.FormatFloat(maxShare, 'g', -1, 64))
	c.cmd.Env, c.cmd.Dir, c.cmd.Stdout, c.cmd.Stderr = lab.Env(), dir, out, out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if asSlurm {
		if err := os.Chown(dir, slurmUID, slurmUID); err != nil {
			return nil, err
		}
		c.cmd.SysProcAttr.Credential = &syscall.Credential{Uid: slurmUID, Gid: slurmUID}
		c.user = "slurm"
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the controller: %w", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the daemon (SIGTERM, then SIGKILL after 10 s).
func (c *controller) stop() {
	if c == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
}

// alive says whether it still runs.
func (c *controller) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// mark starts a window: what the log, the audit log and /proc say now.
func (c *controller) mark() {
	c.logAt, c.auditAt, c.cpuStart = size(c.log), size(c.audit), readCPU(c.cmd.Process.Pid)
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// cpuTimes is a process's CPU time: its own (all threads) and its waited-for
// children's (the Slurm commands it ran).
type cpuTimes struct{ own, children time.Duration }

// readCPU reads /proc/PID/stat's utime, stime, cutime and cstime.
func readCPU(pid int) cpuTimes {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return cpuTimes{}
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return cpuTimes{}
	}
	t := func(k int) time.Duration {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		return time.Duration(n) * time.Second / 100 // USER_HZ
	}
	return cpuTimes{own: t(11) + t(12), children: t(13) + t(14)}
}

// logLine is one line of the controller's JSON log.
type logLine map[string]any

func (l logLine) ms(key string) float64 {
	v, _ := l[key].(float64)
	return v
}

// readSince reads the JSON lines a file gained after offset.
func readSince(path string, offset int64) ([]logLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, err
	}
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &l) == nil {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// Stat is a mean and a maximum.
type Stat struct {
	N         int
	Mean, Max float64
}

func (s *Stat) add(x float64) {
	s.Mean = (s.Mean*float64(s.N) + x) / float64(s.N+1)
	s.N++
	s.Max = max(s.Max, x)
}

// ControllerWindow is what the controller cost in one window.
type ControllerWindow struct {
	User string
	// Polls: each poll's wall time (poll, build, publish, metrics), ms;
	// Jobs, Nodes: each command's wall time, ms, and output, bytes (Jobs:
	// the job listings the polls took); JobsAge: how old the job listing
	// each poll used was, ms (none in runs of releases that did not log it).
	Polls, JobsCmd, NodesCmd, JobsBytes, JobsAge Stat
	// CPUOwnMs and CPUChildMs: CPU per poll of the daemon and of the
	// Slurm commands it ran (duties' commands included).
	CPUOwnMs, CPUChildMs float64
	// Rounds: each duty round's wall time, ms; Duties: each step's.
	Rounds  Stat
	Duties  map[string]*Stat
	Changes Stat // changes a round made (or tried)
	// Actions counts the audit log's outcome lines by action and result
	// ("rebind ok"); Rebound lists the jobs re-bound.
	Actions map[string]int
	Rebound []string
	Exited  bool
}

// addPoll counts one "snapshot published" line.
func (w *ControllerWindow) addPoll(l logLine) {
	w.Polls.add(l.ms("took"))
	if _, ok := l["took_squeue"]; ok { // a poll that took a job listing
		w.JobsCmd.add(l.ms("took_squeue"))
		w.JobsBytes.add(l.ms("bytes_squeue"))
	}
	if _, ok := l["jobs_age"]; ok {
		w.JobsAge.add(l.ms("jobs_age"))
	}
	w.NodesCmd.add(l.ms("took_sinfo") + l.ms("took_scontrol_nodes_json"))
}

// window reads what the controller did since mark.
func (c *controller) window() (ControllerWindow, error) {
	w := ControllerWindow{User: c.user, Duties: map[string]*Stat{}, Actions: map[string]int{}, Exited: !c.alive()}
	lines, err := readSince(c.log, c.logAt)
	if err != nil {
		return w, err
	}
	for _, l := range lines {
		switch l["message"] {
		case "snapshot published":
			w.addPoll(l)
		case "duty round":
			w.Rounds.add(l.ms("took"))
			w.Changes.add(l.ms("changes"))
			for k := range l {
				if step, ok := strings.CutPrefix(k, "took_"); ok {
					if w.Duties[step] == nil {
						w.Duties[step] = &Stat{}
					}
					w.Duties[step].add(l.ms(k))
				}
			}
		}
	}
	if w.Polls.N > 0 && !w.Exited {
		cpu := readCPU(c.cmd.Process.Pid)
		w.CPUOwnMs = float64((cpu.own - c.cpuStart.own).Milliseconds()) / float64(w.Polls.N)
		w.CPUChildMs = float64((cpu.children - c.cpuStart.children).Milliseconds()) / float64(w.Polls.N)
	}
	entries, err := readSince(c.audit, c.auditAt)
	if err != nil && !os.IsNotExist(err) {
		return w, err
	}
	for _, e := range entries {
		action, _ := e["action"].(string)
		result, _ := e["result"].(string)
		if result == "intent" {
			continue
		}
		if result != "ok" && result != "dry-run" {
			result = "failed"
		}
		w.Actions[action+" "+result]++
		if job, _ := e["job"].(string); action == "rebind" && job != "" {
			w.Rebound = append(w.Rebound, job)
		}
	}
	return w, nil
}
