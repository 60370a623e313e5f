package slurmscale

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The stream that runs while a window is measured: a site's users submit
// and cancel all the time, and jobs end and free room (bindings go stale,
// the controller has work).
const (
	streamEvery    = 2 * time.Second  // one backlog job submitted, one cancelled
	fillChurnEvery = 10 * time.Second // one running fill job cancelled and replaced
	fillDeps       = 20               // fill jobs the dependency jobs depend on (never churned)
)

// fillCluster submits the fill and waits (at most 5 minutes) until it runs.
func (s *scaleLab) fillCluster(ctx context.Context) (FillFigures, error) {
	gpus := int(s.cfg.FillFraction * float64(len(s.lab.Cluster.GPUs)))
	jobs, wall, err := submitAll(ctx, s.lab, s.work.fill(gpus))
	if err != nil {
		return FillFigures{}, err
	}
	s.fill = jobs
	// the dependency jobs depend on the last fill jobs, which the stream
	// never cancels: a dependency on a cancelled job fails, and once that
	// job is purged (MinJobAge) Slurm lifts it ("job is gone, dependency
	// lifted"), so the dependent job would be eligible, not helpless
	s.churn = max(len(jobs)-fillDeps, 0)
	for _, j := range jobs[s.churn:] {
		s.work.deps = append(s.work.deps, j.ID)
	}
	f := FillFigures{Jobs: len(jobs)}
	want := idSet(jobs)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		q, err := s.queue(ctx)
		if err != nil {
			return f, err
		}
		f.Running, f.BusyGPUs = 0, 0
		for _, j := range q {
			if want[j.ID] && j.State == "RUNNING" {
				f.Running++
			}
		}
		for _, j := range jobs {
			f.BusyGPUs += j.GPUs
		}
		if err := memoryLeft(); err != nil {
			return f, err
		}
		if f.Running == len(jobs) || time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return f, err
		}
	}
	f.WallS = wall.Seconds()
	s.log("slurmscale: fill: %d of %d jobs running (%d GPUs of %d)", f.Running, f.Jobs, f.BusyGPUs, len(s.lab.Cluster.GPUs))
	return f, nil
}

// window submits a backlog of jobs jobs with the plugins on or off, then
// measures the window: sdiag's counters and the controller's costs while
// the stream runs, the jobs' states and decisions at its end. The backlog
// is cancelled afterwards.
func (s *scaleLab) window(ctx context.Context, jobs int, on bool) (Window, error) {
	w := Window{Plugins: on, Backlog: jobs}
	if err := s.setPlugins(ctx, on); err != nil {
		return w, err
	}
	if _, err := s.sdiag(ctx, true); err != nil {
		return w, err
	}
	logPath := s.lab.Path("log", "slurmctld.log")
	offset := size(logPath)
	backlog, wall, err := submitAll(ctx, s.lab, s.work.backlog(jobs, on))
	if err != nil {
		return w, err
	}
	w.Failures = failuresSince(logPath, offset)
	d, err := s.sdiag(ctx, false)
	if err != nil {
		return w, err
	}
	w.Submitted, w.SubmitWallS, w.SubmitAveUs = len(backlog), wall.Seconds(), d.ByType["REQUEST_SUBMIT_BATCH_JOB"].AveUs()
	s.log("slurmscale: backlog of %d jobs (%d submissions, plugins %v) in %.0f s", jobs, len(backlog), on, wall.Seconds())
	if _, err := s.sdiag(ctx, true); err != nil {
		return w, err
	}
	if on {
		s.ctl.mark()
	}
	t0 := time.Now()
	streamed, err := s.stream(ctx, &w, &backlog, on)
	if err != nil {
		return w, err
	}
	w.WindowS = time.Since(t0).Seconds()
	if w.Sdiag, err = s.sdiag(ctx, false); err != nil {
		return w, err
	}
	w.ControllerTypes = w.Sdiag.TypesTotal(controllerRPCs)
	w.ControllerRPC = w.ControllerTypes // it runs as root: its share is its types'
	if on {
		if w.Controller, err = s.ctl.window(); err != nil {
			return w, err
		}
	}
	if err := s.count(ctx, &w, backlog); err != nil {
		return w, err
	}
	w.LabMiB, w.Load = float64(s.lab.Usage().RSSKiB)/1024, loadAvg()
	s.log("slurmscale: window %.0f s: %d pending, %d running; controller %.1f%% of slurmctld's RPC time; backfill mean cycle %d µs; polls %d (mean %.0f ms), rounds %d (max %.0f ms), actions %v",
		w.WindowS, w.Pending, w.Running, w.Share(), w.Sdiag.Backfill.MeanUs, w.Controller.Polls.N, w.Controller.Polls.Mean,
		w.Controller.Rounds.N, w.Controller.Rounds.Max, w.Controller.Actions)
	w.cleanup = append(ids(backlog), ids(streamed)...)
	return w, nil
}

// stream submits and cancels backlog jobs and replaces fill jobs for the
// window's length; it returns the jobs it submitted (cancelled ones too).
func (s *scaleLab) stream(ctx context.Context, w *Window, backlog *[]submitted, on bool) ([]submitted, error) {
	var out []submitted
	end := time.Now().Add(s.cfg.Window)
	tick := time.NewTicker(streamEvery)
	defer tick.Stop()
	for n := 0; time.Now().Before(end); n++ {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-tick.C:
		}
		if err := memoryLeft(); err != nil {
			return out, err
		}
		jobs := s.work.backlog(1, on)
		churned := n % max(s.churn, 1)
		if n%int(fillChurnEvery/streamEvery) == 0 && s.churn > 0 {
			old := s.fill[churned]
			if err := cancel(ctx, s.lab, []string{old.ID}); err != nil {
				return out, err
			}
			w.Cancelled++
			jobs = append(jobs, s.work.fill(old.GPUs)...)
		}
		got, _, err := submitAll(ctx, s.lab, jobs)
		if err != nil {
			return out, err
		}
		for _, j := range got {
			if j.Kind == KindFill {
				s.fill[churned] = j
				continue
			}
			out = append(out, j)
		}
		w.Streamed += len(got)
		if b := *backlog; len(b) > 0 { // the oldest backlog job is cancelled
			if err := cancel(ctx, s.lab, []string{b[0].ID}); err != nil {
				return out, err
			}
			*backlog, w.Cancelled = b[1:], w.Cancelled+1
		}
	}
	return out, nil
}

// count reads the queue at the window's end: jobs by state, the backlog's
// decisions, and the helpless jobs the controller re-bound.
func (s *scaleLab) count(ctx context.Context, w *Window, backlog []submitted) error {
	q, err := s.queue(ctx)
	if err != nil {
		return err
	}
	for _, j := range q {
		switch j.State {
		case "PENDING":
			w.Pending += j.Tasks
			w.Records++
		case "RUNNING":
			w.Running++
			w.Records++
		}
	}
	w.Verdicts = countVerdicts(q, idSet(backlog))
	helpless := map[string]bool{}
	for _, j := range backlog {
		if j.Kind.Helpless() {
			helpless[j.ID] = true
		}
	}
	for _, id := range w.Controller.Rebound {
		if base, _, _ := strings.Cut(id, "_"); helpless[base] {
			w.HelplessRebound++
		}
	}
	return nil
}

// checkWindow says what is wrong with a window's decisions: with the
// plugins every backlog job carries one (the engine's, or why it was left
// alone), without them none.
func (w Window) checkWindow() error {
	n := w.Verdicts.Engine + w.Verdicts.UntouchedTotal() + w.Verdicts.Refused
	switch {
	case w.Plugins && w.Verdicts.None > failed(w.Failures):
		return fmt.Errorf("slurmscale: backlog %d with the plugins: %d jobs carry no decision and the plugin logged %d failures, e.g. %s", w.Backlog, w.Verdicts.None, failed(w.Failures), strings.Join(w.Verdicts.NoneSeen, "; "))
	case w.Plugins && w.Verdicts.Engine == 0:
		return fmt.Errorf("slurmscale: backlog %d with the plugins: no job decided by the engine (%v)", w.Backlog, w.Verdicts.Untouched)
	case !w.Plugins && n > 0:
		return fmt.Errorf("slurmscale: backlog %d without the plugins: %d jobs carry a decision", w.Backlog, n)
	case w.HelplessRebound > 0:
		return fmt.Errorf("slurmscale: backlog %d: %d jobs no re-binding can help were re-bound", w.Backlog, w.HelplessRebound)
	}
	return nil
}

// minAvailableMiB is the memory a run leaves the machine (shared with other
// work): below it the run stops and says so, rather than let the kernel
// pick a process to kill.
const minAvailableMiB = 2048

// memoryLeft fails when the machine's available memory is below
// minAvailableMiB.
func memoryLeft() error {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kib, _ := strconv.Atoi(strings.Fields(rest)[0])
			if kib/1024 < minAvailableMiB {
				return fmt.Errorf("slurmscale: the machine has %d MiB of memory left (under %d MiB): the lab's daemons and running jobs (about 7 MiB a slurmd, 8 MiB a running job) have taken it", kib/1024, minAvailableMiB)
			}
		}
	}
	return nil
}

// failureRe matches the plugin's error lines about a job (its failures:
// with on_failure open the job passes as submitted); the message is kept
// without the job's name and times.
var failureRe = regexp.MustCompile(`error: job_submit/gangtopo: job .* of uid \d+: (.*?)(?: \(took \d+us, engine \d+us\))?$`)

// failuresSince counts the plugin's failures logged after offset, by
// message (numbers dropped, so that alike failures count together).
func failuresSince(path string, offset int64) map[string]int {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return nil
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(data[offset:]), "\n") {
		if m := failureRe.FindStringSubmatch(line); m != nil {
			out[digits.ReplaceAllString(m[1], "N")]++
		}
	}
	return out
}

var digits = regexp.MustCompile(`\d+`)

func failed(f map[string]int) int {
	n := 0
	for _, c := range f {
		n += c
	}
	return n
}
