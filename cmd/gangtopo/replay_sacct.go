package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// A site's own history (--sacct): the jobs of a sacct dump replayed on the
// site's cluster file instead of the Philly trace, at their own pace, with
// slurmctld's scheduling times (queue.Timing: --scontrol-config gives
// the site's SchedulerParameters and slurmctld's boot time, else Slurm's
// defaults). Each job asks what it asked: its GPUs, its -N when the
// submit line gave one, its --gang-topology; it runs as long as it ran
// (end - start), under its own time limit; a job cancelled while it
// waited leaves the queue when it was cancelled. What cannot be replayed
// is counted and listed with the reason (sacctSkip), never dropped
// silently.

// sacctPolicies are the policies a history replays by default.
const sacctPolicies = "slurm,gangtopo-slurm,gangtopo-slurm+quota,gangtopo-slurm+defrag"

// historyInfo is what the report says about a history beyond the jobs.
type historyInfo struct {
	jobs    []traces.SacctJob // replayed, in queue order
	skipped []sacctSkip
	origin  time.Time
	timing  string // the scheduler timing, described
	check   bool   // --check-starts
}

// sacctSkip is a job left out of the replay, and why.
type sacctSkip struct {
	job traces.SacctJob
	why string
}

// loadSacct reads --sacct into the setup: the jobs, the skipped ones, one
// run at the history's own pace (or --compress), the timing and shares.
func (o *replayOptions) loadSacct(set *replaySetup) error {
	raw, err := traces.ReadSacct(o.sacct, traces.SacctOptions{KeepNames: o.keepNames, Salt: o.nameSalt})
	if errors.Is(err, fs.ErrNotExist) {
		return usagef("--sacct %s does not exist", o.sacct)
	}
	if err != nil {
		return asUsage(err)
	}
	h := &historyInfo{check: o.checkStarts}
	kept, skipped := sacctReplayable(raw)
	h.skipped = skipped
	if len(kept) == 0 {
		return usagef("--sacct %s: none of its %d jobs can be replayed (%s)", o.sacct, len(raw), skipSummary(skipped))
	}
	h.origin = kept[0].Eligible
	jobs := make([]queue.Job, len(kept))
	for i := range kept {
		jobs[i] = sacctQueueJob(&kept[i], h.origin)
	}
	h.jobs = kept
	tm, desc, err := o.sacctTiming(h.origin)
	if err != nil {
		return err
	}
	if tm != nil {
		set.cfg.Timing = tm
	}
	h.timing = desc
	set.hist = h
	set.info.History = "each job asks for the GPUs it held (its -N and --gang-topology when its submit line gave them), runs as long as it ran, under its own time limit; " + desc
	gpus := set.cluster.NumGPUs()
	set.info.Trace, set.info.Jobs = replayDisplayPath(o.sacct), len(jobs)
	set.info.Trace0, set.info.Trace1 = kept[0].Eligible, kept[len(kept)-1].Eligible
	k := 1.0
	if o.compress > 0 {
		k = o.compress
	}
	set.runs = []*replayRun{newReplayRun(jobs, gpus, k, queue.PeakLoad(jobs, gpus, queue.PeakWindow))}
	if o.quotaSet != nil {
		o.quotaSet.sim.Shares, o.quotaSet.desc = sacctShares(jobs, gpus)
	}
	return nil
}

// sacctReplayable splits a dump's jobs into those the replay runs, in
// queue order (eligible time, then job ID: priority/basic's order), and
// those it cannot, with the reason.
func sacctReplayable(raw []traces.SacctJob) ([]traces.SacctJob, []sacctSkip) {
	var kept []traces.SacctJob
	var skipped []sacctSkip
	for _, j := range raw {
		if why := sacctWhyNot(&j); why != "" {
			skipped = append(skipped, sacctSkip{j, why})
			continue
		}
		if j.Eligible.IsZero() || j.Eligible.Before(j.Submit) {
			j.Eligible = j.Submit
		}
		kept = append(kept, j)
	}
	sort.SliceStable(kept, func(a, b int) bool {
		if !kept[a].Eligible.Equal(kept[b].Eligible) {
			return kept[a].Eligible.Before(kept[b].Eligible)
		}
		return kept[a].Raw < kept[b].Raw
	})
	return kept, skipped
}

// sacctWhyNot says why a job cannot be replayed ("" when it can).
func sacctWhyNot(j *traces.SacctJob) string {
	switch {
	case j.HetJob >= 0:
		return "heterogeneous job component (its components start together; the queue replays one gang per job)"
	case j.End.IsZero():
		return fmt.Sprintf("not ended when dumped (%s)", j.State)
	case j.Start.IsZero() && j.State != "CANCELLED":
		return fmt.Sprintf("never started (%s)", j.State)
	case sacctGPUs(j) == 0:
		return "asks for no GPU (the replay models GPUs only)"
	}
	if j.GangTopology != "" {
		if _, err := request.ParseOption(j.GangTopology); err != nil {
			return fmt.Sprintf("--gang-topology %q: %v", j.GangTopology, err)
		}
	}
	return ""
}

// sacctGPUs is the GPUs a job held, else (never started) asked for.
func sacctGPUs(j *traces.SacctJob) int {
	if !j.Start.IsZero() && j.GPUs > 0 {
		return j.GPUs
	}
	return j.ReqGPUs
}

// sacctQueueJob is a replayable job as the queue sees it, in seconds from
// origin.
func sacctQueueJob(j *traces.SacctJob, origin time.Time) queue.Job {
	q := queue.Job{Name: j.ID + " (" + j.At + ")", Submit: j.Eligible.Sub(origin).Seconds(), GPUs: sacctGPUs(j),
		Account: j.Account, Limit: j.Limit.Seconds()}
	started := !j.Start.IsZero() && j.End.After(j.Start)
	if started {
		q.Duration = j.End.Sub(j.Start).Seconds()
	}
	if j.State == "CANCELLED" {
		q.Cancel = max(j.End.Sub(origin).Seconds(), q.Submit)
		if !started {
			q.Duration = q.Cancel - q.Submit // had it run, until its cancellation
		}
	}
	if j.NodesGiven && j.ReqNodes > 0 && j.ReqNodes <= q.GPUs {
		q.Nodes = j.ReqNodes
	}
	if j.GangTopology != "" {
		opt, _ := request.ParseOption(j.GangTopology)
		q.Option = &opt
	}
	return q
}

// sacctShares gives each account of the history a share in proportion to
// its GPU-time (largest remainders round), every account lending.
func sacctShares(jobs []queue.Job, gpus int) (quota.Shares, string) {
	work := map[string]float64{}
	for _, j := range jobs {
		work[j.Account] += j.Duration * float64(j.GPUs)
	}
	names := make([]string, 0, len(work))
	for a := range work {
		names = append(names, a)
	}
	sort.Slice(names, func(a, b int) bool {
		if work[names[a]] != work[names[b]] {
			return work[names[a]] > work[names[b]]
		}
		return names[a] < names[b]
	})
	ranked := make([]float64, len(names))
	for i, a := range names {
		ranked[i] = work[a]
	}
	sh := make(quota.Shares, len(names))
	var parts []string
	for i, g := range quota.Proportional(gpus, ranked) {
		sh[i] = quota.Share{Account: names[i], GPUs: g, Lend: true}
		parts = append(parts, fmt.Sprintf("%s %d", names[i], g))
	}
	return sh, "quotas: the history's accounts, shares in proportion to their GPU-time (" + strings.Join(parts, ", ") + " GPUs)"
}

// skipSummary counts the skipped jobs by reason, in one line.
func skipSummary(skipped []sacctSkip) string {
	count := map[string]int{}
	var order []string
	for _, s := range skipped {
		if count[s.why] == 0 {
			order = append(order, s.why)
		}
		count[s.why]++
	}
	var parts []string
	for _, why := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[why], why))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// writeSkipped lists every job left out: in the report (the first ten
// per reason) and, with --skipped FILE, all of them.
func (h *historyInfo) writeSkipped(w io.Writer, file string) error {
	fmt.Fprintf(w, "\n%d jobs of the dump left out of the replay: %s\n", len(h.skipped), skipSummary(h.skipped))
	shown := map[string]int{}
	var order []string
	for _, s := range h.skipped {
		if shown[s.why] == 0 {
			order = append(order, s.why)
		}
		if shown[s.why]++; shown[s.why] <= 10 {
			fmt.Fprintf(w, "  %s (%s): %s\n", s.job.ID, s.job.At, s.why)
		}
	}
	for _, why := range order {
		if n := shown[why]; n > 10 {
			fmt.Fprintf(w, "  ... and %d more: %s\n", n-10, why)
		}
	}
	if file == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("job\twhere\twhy\n")
	for _, s := range h.skipped {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", s.job.ID, s.job.At, s.why)
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// sacctFlags checks the --sacct flags against the others and sets what
// --sacct changes: its default policies, and no slowdown for the check
// (the recorded run times are what the jobs ran where they ran).
func (o *replayOptions) sacctFlags() error {
	if o.sacct == "" {
		for flag, set := range map[string]bool{"--keep-names": o.keepNames, "--name-salt": o.nameSalt != "",
			"--scontrol-config": o.scontrolConfig != "", "--check-starts": o.checkStarts, "--skipped": o.skippedFile != ""} {
			if set {
				return usagef("%s goes with --sacct FILE", flag)
			}
		}
		return nil
	}
	if o.trace != "" {
		return usagef("--sacct and --trace: give one job history")
	}
	if o.peakLoad != "1" {
		return usagef("--sacct replays the history at its own pace: --peak-load does not apply (--compress K does)")
	}
	if o.checkStarts && o.compress > 0 && o.compress != 1 {
		return usagef("--check-starts compares with the recorded starts: it needs the history's own pace (no --compress)")
	}
	if !o.policiesGiven {
		o.policies = sacctPolicies
		if o.checkStarts {
			o.policies = checkPolicy
		}
	}
	if o.checkStarts && !slices.Contains(strings.Split(o.policies, ","), checkPolicy) {
		return usagef("--check-starts checks the %s policy: add it to --policies", checkPolicy)
	}
	if !o.slowdownGiven {
		// a recorded run time already holds what its placement cost
		o.slowdown = "none"
	}
	return nil
}

// write adds the history's own sections to the report: the jobs left
// out, and the timing check.
func (h *historyInfo) write(w io.Writer, set *replaySetup, skippedFile string) error {
	if err := h.writeSkipped(w, skippedFile); err != nil {
		return err
	}
	if !h.check {
		return nil
	}
	for i, p := range set.policies {
		if p == checkPolicy {
			h.writeCheck(w, set.runs[0].bands[set.slowdown.central()].results[i])
		}
	}
	return nil
}
