package slurmscale

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// Result is one lab's figures: one size of cluster on one Slurm release,
// everything measured in the same run (ratios are read within it).
type Result struct {
	Date, Release, Series string
	Shape                 Shape
	Nodes, GPUs           int
	Accounting            bool
	// ControllerUser is who the controller ran as: slurm (its share is its
	// user's in sdiag) or root (its share is its message types').
	ControllerUser string
	// MaxRPCShare is the controller's --max-rpc-share, percent (0: off).
	MaxRPCShare float64 `json:",omitempty"`
	Start       StartFigures
	Throughput  ThroughputFigures
	Fill        FillFigures
	Windows     []Window
	// ElapsedS is the whole run, lab start to stop.
	ElapsedS float64
}

// StartFigures are the lab's start.
type StartFigures struct {
	WallS      float64 // Start: configuration, munged, slurmdbd, slurmctld, every slurmd registered and idle
	Batch      int     // slurmds started at a time
	Procs      int     // the lab's processes once idle
	RSSMiB     float64 // their resident memory together
	SlurmdMiB  float64 // one slurmd's, on average
	CtldMiB    float64
	StopWallS  float64
	CtldEndMiB float64 // slurmctld's at the end of the run
}

// ThroughputFigures are the submission benchmark: Jobs held jobs with
// the plugins and Jobs without, in alternating batches.
type ThroughputFigures struct {
	Jobs                int
	WallOnS, WallOffS   float64
	Ratio               float64 // jobs/s with / without
	SubmitOn, SubmitOff RPC     // sdiag's REQUEST_SUBMIT_BATCH_JOB
	CtldCPUOnMs         float64 // slurmctld's CPU per submission
	CtldCPUOffMs        float64
	// The plugin's own time per call, as it logged it inside slurmctld
	// (µs), and the engine's share.
	Calls                     int
	TookP50, TookP99, TookMax float64
	EngineP50, EngineP99      float64
	// VerdictsOn and VerdictsOff: what the jobs of each mode carry.
	VerdictsOn, VerdictsOff Verdicts
	// Load is the machine's 1-minute load average at the phase's end (a
	// shared 2-core machine: figures move with it).
	Load float64
}

// FillFigures are the running jobs under the backlog.
type FillFigures struct {
	Jobs, Running, BusyGPUs int
	WallS                   float64
}

// Window is one measured window: the backlog at one size, with the
// plugins on or off, while the stream of submissions and cancellations
// runs and the controller polls and acts.
type Window struct {
	Plugins bool
	// Backlog: jobs submitted to the backlog so far (array tasks one by
	// one); Records: job records Slurm lists (a pending array is one);
	// Pending and Running: jobs by state (array tasks counted).
	Backlog, Records, Pending, Running int
	// SubmitWallS: submitting this step's jobs; SubmitAveUs: slurmctld's
	// time per submission meanwhile (sdiag).
	SubmitWallS, SubmitAveUs float64
	Submitted                int
	WindowS                  float64
	Sdiag                    *Sdiag
	// ControllerRPC: the controller's RPCs (its user's, or its types'
	// when it runs as root); ControllerTypes: its types' in any case.
	ControllerRPC, ControllerTypes RPC
	Controller                     ControllerWindow
	// Streamed and Cancelled: the stream's submissions and cancellations
	// during the window.
	Streamed, Cancelled int
	// Verdicts: the backlog jobs' decisions (plugins on: every job is
	// decided by the engine or says why not).
	Verdicts Verdicts
	// HelplessRebound: jobs no re-binding can help (held, dependency,
	// QOS-limited) that the controller re-bound: must be 0.
	// Failures: the plugin's error lines in slurmctld's log while the
	// backlog was submitted (on_failure open: the job passes as submitted),
	// by message; a job without a decision line is one of them.
	Failures        map[string]int
	HelplessRebound int
	LabMiB          float64
	Load            float64 // 1-minute load average at the window's end
	// cleanup: the jobs the window submitted, cancelled after it is
	// recorded (not in the figures)
	cleanup []string
}

// Share is the controller's share of slurmctld's RPC time, percent.
func (w Window) Share() float64 {
	if w.Sdiag == nil {
		return 0
	}
	total := w.Sdiag.Total()
	if total.TotalUs == 0 {
		return 0
	}
	return 100 * float64(w.ControllerRPC.TotalUs) / float64(total.TotalUs)
}

// PerMinute is RPCs a minute.
func (w Window) PerMinute(r RPC) float64 {
	if w.WindowS == 0 {
		return 0
	}
	return float64(r.Count) * 60 / w.WindowS
}

// Check says which of the run's verdict checks failed: the plugin's
// decisions (every job with the plugins carries one, none without) and the
// jobs no re-binding can help (never re-bound). Timings are figures, not
// checks: a shared machine moves them.
func (r *Result) Check() error {
	errs := []error{r.Throughput.checkVerdicts()}
	for _, w := range r.Windows {
		errs = append(errs, w.checkWindow())
	}
	return errors.Join(errs...)
}

// loadAvg is the machine's 1-minute load average (0 when unreadable).
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	x, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return x
}
