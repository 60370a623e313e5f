package slurmlab

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A job history made on purpose: a workload of sleep jobs driven through
// a lab with accounting (Options.Accounting) and dumped the way a site
// would dump its own (sacct --json, sacct -P), with the configuration and
// the scheduler's counters beside it. gangtopo replay --sacct reads the
// dump; the timing check replays it under the stock Slurm model and
// compares each job's predicted start with the one slurmctld recorded.
//
// The workload is deterministic for a seed: GPU jobs of 1 to 32 GPUs
// (--gpus=G --cpus-per-gpu=1, so stock Slurm may split any of them over
// nodes), sleeping 10-60 s under limits of 1-3 minutes (a few outrun
// theirs and time out), in several accounts; a third of them submitted at
// once (the backlog), the rest arriving at random at about the cluster's
// capacity; some cancelled, pending or running; one job array and one
// heterogeneous job; a few with --gang-topology when the SPANK plugin is
// loaded (HistoryOptions.GangOption).

// HistoryJob is one submission of a history workload.
type HistoryJob struct {
	At      time.Duration // submitted this long after the run's start
	Account string
	GPUs    int // per job (per task of an array, per component of a het job)
	Sleep   time.Duration
	Limit   int           // --time, minutes
	Cancel  time.Duration // > 0: scancel this long after submitting
	Array   int           // > 0: an array of this many tasks
	Het     bool          // a heterogeneous job of two components
	Gang    bool          // asks for --gang-topology (when loaded)
}

// HistoryAccounts are the accounts a history workload runs under.
var HistoryAccounts = []string{"physics", "vision", "speech", "infra"}

// historySizes is the GPU mix, in percent: mostly small jobs, a few gangs.
var historySizes = []struct{ gpus, pct int }{{1, 50}, {2, 15}, {4, 15}, {8, 12}, {16, 6}, {32, 2}}

// NewHistory draws n submissions for a cluster of gpus GPUs.
func NewHistory(n int, seed int64, gpus int) []HistoryJob {
	rng := rand.New(rand.NewSource(seed))
	jobs := make([]HistoryJob, n)
	var work float64 // GPU-seconds submitted after the backlog
	for i := range jobs {
		j := &jobs[i]
		j.GPUs = drawSize(rng)
		j.Sleep = time.Duration(10+rng.Intn(51)) * time.Second
		j.Limit = int(math.Ceil(j.Sleep.Minutes())) + rng.Intn(3)
		if rng.Intn(100) < 3 {
			j.Limit, j.Sleep = 1, 75*time.Second // outruns its limit: TIMEOUT
		}
		j.Account = HistoryAccounts[weighted(rng, []int{40, 30, 20, 10})]
		if rng.Intn(100) < 5 {
			j.Cancel = time.Duration(5+rng.Intn(56)) * time.Second
		}
		j.Gang = j.GPUs >= 16 && rng.Intn(2) == 0
		if i >= n/3 {
			work += float64(j.GPUs) * j.Sleep.Seconds()
		}
	}
	// after the backlog, arrivals at about the cluster's capacity
	span := work / float64(gpus)
	at := 0.0
	for i := n / 3; i < n; i++ {
		at += rng.ExpFloat64() * span / float64(n-n/3)
		jobs[i].At = time.Duration(at * float64(time.Second)).Round(100 * time.Millisecond)
	}
	if n >= 20 {
		jobs[n/2].Array, jobs[n/2].GPUs = 5, 1
		jobs[n/2+1].Het, jobs[n/2+1].GPUs, jobs[n/2+1].Gang = true, 1, false
	}
	return jobs
}

func drawSize(rng *rand.Rand) int {
	w := make([]int, len(historySizes))
	for i, s := range historySizes {
		w[i] = s.pct
	}
	return historySizes[weighted(rng, w)].gpus
}

// weighted draws an index with probability proportional to its weight.
func weighted(rng *rand.Rand, w []int) int {
	total := 0
	for _, v := range w {
		total += v
	}
	r := rng.Intn(total)
	for i, v := range w {
		if r < v {
			return i
		}
		r -= v
	}
	return len(w) - 1
}

// HistoryOptions say how a history runs.
type HistoryOptions struct {
	// GangOption adds --gang-topology=leaf:preferred to the jobs that draw
	// it: only with the SPANK plugin loaded (sbatch refuses it otherwise).
	GangOption bool
	// Limit bounds the whole run (default 40 minutes).
	Limit time.Duration
	Logf  func(string, ...any)
}

// args is the sbatch command line of a submission.
func (j *HistoryJob) args(gang bool) []string {
	one := []string{"-A", j.Account, fmt.Sprintf("--time=%d", j.Limit), fmt.Sprintf("--gpus=%d", j.GPUs), "--cpus-per-gpu=1"}
	if gang && j.Gang {
		one = append(one, "--gang-topology=leaf:preferred")
	}
	argv := append([]string{"-o", "/dev/null", "-J", "hist"}, one...)
	if j.Array > 0 {
		argv = append(argv, fmt.Sprintf("--array=0-%d", j.Array-1))
	}
	if j.Het {
		argv = append(append(argv, ":"), one...)
	}
	return append(argv, "--wrap", fmt.Sprintf("sleep %d", int(j.Sleep.Seconds())))
}

// RemoveHistoryAccounts takes the accounts RunHistory added out of
// Slurm's accounting again (their jobs cancelled first), so that a test
// after it finds the associations as they were.
func (l *Lab) RemoveHistoryAccounts(ctx context.Context) error {
	if err := l.CancelAll(ctx); err != nil {
		return err
	}
	for _, a := range HistoryAccounts {
		if _, err := l.Sacctmgr(ctx, "delete", "user", "root", "where", "account="+a); err != nil {
			return err
		}
		if _, err := l.Sacctmgr(ctx, "delete", "account", a); err != nil {
			return err
		}
	}
	return nil
}

// RunHistory makes the accounts, submits the workload on time, cancels
// what it says, and waits until every job has ended. It returns when the
// run started (for sacct -S).
func (l *Lab) RunHistory(ctx context.Context, jobs []HistoryJob, o HistoryOptions) (time.Time, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Limit == 0 {
		o.Limit = 40 * time.Minute
	}
	for _, a := range HistoryAccounts {
		if _, err := l.Sacctmgr(ctx, "add", "account", a); err != nil {
			return time.Time{}, err
		}
		if _, err := l.Sacctmgr(ctx, "add", "user", "root", "account="+a); err != nil {
			return time.Time{}, err
		}
	}
	start := time.Now().Truncate(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for i := range jobs {
		j := &jobs[i]
		if d := time.Until(start.Add(j.At)); d > 0 {
			time.Sleep(d)
		}
		id, err := l.Submit(ctx, nil, j.args(o.GangOption)...)
		if err != nil {
			return start, err
		}
		if j.Cancel > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(j.Cancel)
				if _, err := l.Run(ctx, DefaultTimeout, "scancel", id); err != nil {
					errs <- err
				}
			}()
		}
		if i%50 == 49 {
			o.Logf("slurmlab: history: %d of %d submitted after %v", i+1, len(jobs), time.Since(start).Round(time.Second))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return start, err
	}
	return start, l.waitHistoryDone(ctx, start.Add(o.Limit), o.Logf)
}

// waitHistoryDone polls squeue until no job of the history's accounts is
// left.
func (l *Lab) waitHistoryDone(ctx context.Context, deadline time.Time, logf func(string, ...any)) error {
	accts := strings.Join(HistoryAccounts, ",")
	last := time.Now()
	for {
		out, err := l.Run(ctx, DefaultTimeout, "squeue", "-h", "-A", accts, "-o", "%i")
		if err != nil {
			return err
		}
		left := len(strings.Fields(out))
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("history: %d jobs still queued or running at the deadline", left)
		}
		if time.Since(last) > time.Minute {
			logf("slurmlab: history: %d jobs left", left)
			last = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
}

// SacctFormat are the fields of the sacct -P dump, in its order: every
// field gangtopo replay --sacct reads from a pipe-separated dump.
const SacctFormat = "JobID,JobIDRaw,JobName,User,Account,Partition,QOS,State,Submit,Eligible,Start,End,Elapsed,Timelimit," +
	"ReqTRES,AllocTRES,ReqNodes,AllocNodes,NodeList,ReqCPUS,AllocCPUS,Flags,SubmitLine"

// DumpHistory writes what a site would hand over, for the jobs of the
// history's accounts submitted since start: sacct --json (sacct.json),
// sacct -P (sacct.txt, SacctFormat), slurm.conf, scontrol show config
// (config.txt) and sdiag (sdiag.txt: the scheduler's cycles).
func (l *Lab) DumpHistory(ctx context.Context, start time.Time, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	since := start.Add(-time.Second).Format("2006-01-02T15:04:05")
	sel := []string{"-a", "-A", strings.Join(HistoryAccounts, ","), "-S", since, "-E", "now"}
	dumps := []struct {
		file string
		cmd  string
		args []string
	}{
		{"sacct.json", "sacct", append([]string{"--json"}, sel...)},
		{"sacct.txt", "sacct", append([]string{"-P", "-X", "--format=" + SacctFormat}, sel...)},
		{"config.txt", "scontrol", []string{"show", "config"}},
		{"sdiag.txt", "sdiag", nil},
	}
	for _, d := range dumps {
		out, err := l.Run(ctx, time.Minute, d.cmd, d.args...)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, d.file), []byte(out), 0o644); err != nil {
			return err
		}
	}
	conf, err := os.ReadFile(l.Conf)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "slurm.conf"), conf, 0o644)
}

// HistorySummary describes a workload in one line (the README's); gang
// says whether --gang-topology was given (the SPANK plugin loaded).
func HistorySummary(jobs []HistoryJob, gang bool) string {
	sizes := map[int]int{}
	var cancel, arrays, het, gangs int
	var last time.Duration
	for _, j := range jobs {
		sizes[j.GPUs]++
		if j.Cancel > 0 {
			cancel++
		}
		if j.Array > 0 {
			arrays++
		}
		if j.Het {
			het++
		}
		if j.Gang && gang {
			gangs++
		}
		last = max(last, j.At)
	}
	var keys []int
	for k := range sizes {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var mix []string
	for _, k := range keys {
		mix = append(mix, strconv.Itoa(sizes[k])+"x"+strconv.Itoa(k))
	}
	return fmt.Sprintf("%d submissions (GPUs: %s), %d cancelled, %d array, %d het, %d with --gang-topology; %d at once, the last %v after the first",
		len(jobs), strings.Join(mix, " "), cancel, arrays, het, gangs, len(jobs)/3, last.Round(time.Second))
}
