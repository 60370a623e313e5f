package main

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/traces"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// replayPolicies are the policies gangtopo replay knows, in report order.
var replayPolicies = []string{"gangtopo", "gangtopo-slurm", "slurm", "slurm-flat", queue.NaivePods}

type replayOptions struct {
	topology, trace, traces string
	policies                string
	from, to                string
	peakLoad                string
	compress                float64
	slowdown                string
	limitFactor             float64
	gangTopology            string
	gangAbove, cpusPerGPU   int
	oneNodeUpTo             int
	rendezvous              time.Duration
	quotaSet                *replayQuota // --quota, parsed (nil: no quotas)
	defrag                  string
	quota                   string
	slurmSeries             string
	output                  string
	// a site's history (replay_sacct.go)
	sacct, scontrolConfig, nameSalt, skippedFile, timing string
	keepNames, checkStarts                               bool
	policiesGiven, slowdownGiven                         bool
}

func newReplayCmd() *cobra.Command {
	o := replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay --topology cluster.yaml [--trace philly.csv] [--policies gangtopo,slurm,...]",
		Short: "Replay the Philly trace over time through several policies: queue waits, utilisation, locality",
		Long: `Replay the Philly job trace (submit time, duration, GPUs) on a cluster file through
each policy, with a Slurm-like queue (FIFO by submit order, EASY backfill, time
limits = durations) for the all-or-nothing policies and Kubernetes' pod queue for
naive-pods. Jobs run for their duration times a placement slowdown. Submit times
are compressed so that the busiest week of the trace loads the cluster to
--peak-load (or by --compress). See docs/queue.md.

Policies: gangtopo (the engine), slurm (stock Slurm, topology/tree, as
checked against the placements recorded on the series --slurm-series names),
slurm-flat (stock Slurm without a topology plugin), naive-pods (Kubernetes
without gang scheduling). gangtopo and gangtopo-slurm also with +defrag (the
controller's defragmentation) or +quota (dynamic GPU quotas); the gang
policies also with +hard (Slurm's hard GrpTRES limits at each account's
share); --quota says how the trace's jobs are dealt to accounts.

--sacct FILE replays a site's own history instead (sacct --json or sacct -P
output), at its own pace with slurmctld's scheduling times, names hashed;
--check-starts compares the slurm model's start of each job with the
recorded one. See docs/replay.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.policiesGiven, o.slowdownGiven = cmd.Flags().Changed("policies"), cmd.Flags().Changed("slowdown")
			return runReplay(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "topology", "", "cluster file (YAML, version v1)")
	f.StringVar(&o.trace, "trace", "", "Philly job table (default: TRACES/"+traces.PhillyJobs+")")
	f.StringVar(&o.traces, "traces", "", "trace directory (default: $"+traces.EnvDir+", else ../shared/data/traces of the checkout)")
	f.StringVar(&o.policies, "policies", strings.Join(replayPolicies, ","), "policies to replay, comma-separated")
	f.StringVar(&o.from, "from", "", "first submit time to replay (YYYY-MM-DD[ HH:MM:SS], trace time); default the first job")
	f.StringVar(&o.to, "to", "", "replay jobs submitted before this time; default all")
	f.StringVar(&o.peakLoad, "peak-load", "1", "compress time so the trace's busiest week arrives at this fraction of the cluster's capacity; a comma-separated list replays each (a load sweep)")
	f.Float64Var(&o.compress, "compress", 0, "compress submit times by this factor instead of --peak-load")
	f.StringVar(&o.slowdown, "slowdown", "default", "placement slowdown: default, none, or KEY=F,... over the default (nvlink, node, block, leaf, spine, any, spread)")
	f.Float64Var(&o.limitFactor, "limit-factor", 1, "time limit = duration x this (what backfill plans with)")
	f.StringVar(&o.gangTopology, "gang-topology", "leaf:preferred", "--gang-topology of jobs above --gang-above GPUs")
	f.IntVar(&o.gangAbove, "gang-above", 8, "jobs with more GPUs than this get --gang-topology")
	f.IntVar(&o.oneNodeUpTo, "one-node-up-to", 0, "jobs of at most this many GPUs ask for exactly one node (-N 1; one pod for naive-pods); 0: none")
	f.IntVar(&o.cpusPerGPU, "cpus-per-gpu", 4, "CPUs each job asks per GPU")
	f.DurationVar(&o.rendezvous, "rendezvous-timeout", 10*time.Minute, "naive-pods: a partial gang gives up and restarts after this")
	f.StringVar(&o.defrag, "defrag", "default", "the defragmentation policy of the +defrag policies: default (gangtopo.yaml's defaults), or KEY=VALUE,... over them ("+replayDefragKeys+")")
	f.StringVar(&o.quota, "quota", "", "GPU shares per account for every policy, and the setting of the +hard and +quota policies: default, or KEY=VALUE,... ("+replayQuotaKeys+"); see docs/quota.md")
	f.StringVar(&o.slurmSeries, "slurm-series", stockslurm.DefaultSeries, "the Slurm series the slurm policy models, named in the report: "+
		stockslurm.SeriesNames()+" (the series whose recorded placements the model was checked against)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, csv or markdown")
	f.StringVar(&o.sacct, "sacct", "", "replay a site's own job history instead of the Philly trace: the output of sacct --json or sacct -P (see docs/replay.md); default policies "+sacctPolicies)
	f.BoolVar(&o.keepNames, "keep-names", false, "--sacct: keep user and account names (default: hashed)")
	f.StringVar(&o.nameSalt, "name-salt", "", "--sacct: hash names keyed with this secret (HMAC-SHA-256), so that no one can confirm a guessed name")
	f.StringVar(&o.scontrolConfig, "scontrol-config", "", "--sacct: the output of scontrol show config on the cluster: its scheduler parameters and boot time (default: Slurm's defaults)")
	f.StringVar(&o.timing, "timing", "slurm", "--sacct: when passes run: slurm (as slurmctld: main pass on submit and end, a backfill cycle every bf_interval with a reservation for every job it tests), easy (the same times, EASY backfill: one reservation), events (a pass at every event)")
	f.BoolVar(&o.checkStarts, "check-starts", false, "--sacct: compare the slurm policy's predicted start of each job with the recorded one (slowdown none unless --slowdown is given)")
	f.StringVar(&o.skippedFile, "skipped", "", "--sacct: write every job left out of the replay, with the reason, to this file (tab-separated)")
	return cmd
}

// replaySetup is everything a replay needs, resolved from the flags: one
// run per load, each replaying every policy.
type replaySetup struct {
	cluster  *topology.Cluster
	policies []string
	cfg      queue.Config
	info     replayInfo
	runs     []*replayRun
	hist     *historyInfo // --sacct
}

// replayRun is the trace at one load and what each policy made of it.
type replayRun struct {
	compress, peak, offered float64
	jobs                    []queue.Job
	results                 []*queue.Result // by policy
	elapsed                 []time.Duration
}

// replayInfo describes the replay for the report header.
type replayInfo struct {
	Topology, Trace      string
	Jobs                 int
	Trace0, Trace1       time.Time // first and last submit replayed
	Slowdown, GangOption string
	GangAbove, OneNode   int
	LimitFactor          float64
	Rendezvous           time.Duration
	Defrag               string // the +defrag policies' settings, when any runs
	// Quota describes the accounts and shares (empty: none); OwnerBound
	// is the owners' allowed wait, QuotaIdle whether an account idles.
	Quota      string
	OwnerBound float64
	QuotaIdle  bool
	// Slurm says what the slurm model stands for, when a policy uses it
	Slurm string
	// History describes a --sacct replay's jobs and timing ("" for Philly)
	History string
}

func runReplay(w, errw io.Writer, o replayOptions) error {
	set, err := o.setup()
	if err != nil {
		return err
	}
	if err := runReplays(set, errw); err != nil {
		return err
	}
	if len(set.runs) > 1 {
		sw := &replaySweep{set: set}
		switch o.output {
		case "csv":
			return sw.writeCSV(w)
		case "markdown":
			sw.writeMarkdown(w)
		default:
			sw.writeTable(w)
		}
		return nil
	}
	rep := newReplayReport(set, set.runs[0])
	switch o.output {
	case "csv":
		return rep.writeCSV(w)
	case "markdown":
		rep.writeMarkdown(w)
	default:
		rep.writeTable(w)
	}
	if set.hist != nil {
		return set.hist.write(w, set, o.skippedFile)
	}
	return nil
}

// setup checks the flags and loads the cluster and the trace. Every
// problem here is the user's to fix (exit status 2).
func (o *replayOptions) setup() (*replaySetup, error) {
	if o.output != "table" && o.output != "csv" && o.output != "markdown" {
		return nil, usagef("--output %q: want table, csv or markdown", o.output)
	}
	if err := o.sacctFlags(); err != nil {
		return nil, err
	}
	pols, err := parseReplayPolicies(o.policies)
	if err != nil {
		return nil, err
	}
	series, err := stockslurm.LookupSeries(o.slurmSeries)
	if err != nil {
		return nil, usagef("--slurm-series: %v", err)
	}
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	c, err := loadCluster(o.topology)
	if err != nil {
		return nil, err
	}
	var path string
	var raw []traces.Job
	if o.sacct == "" {
		if path, raw, err = o.readTrace(); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(pols, func(p string) bool { return strings.HasSuffix(p, defragSuffix) }) {
		d, err := parseReplayDefrag(o.defrag)
		if err != nil {
			return nil, err
		}
		cfg.Defrag = d
	}
	quotaPol := slices.ContainsFunc(pols, func(p string) bool { _, _, ok := splitQuotaSuffix(p); return ok })
	if quotaPol || o.quota != "" {
		q, err := parseReplayQuota(o.quota)
		if err != nil {
			return nil, err
		}
		if slices.Contains(pols, queue.NaivePods) {
			return nil, usagef("--policies: %s has no accounts or QOS; leave it out of a replay with quotas", queue.NaivePods)
		}
		o.quotaSet = q
	}
	set := &replaySetup{cluster: c, policies: pols, cfg: cfg}
	set.info = replayInfo{Topology: o.topology, Trace: replayDisplayPath(path), Slowdown: cfg.Slowdown.String(),
		GangOption: cfg.GangOption.String(), GangAbove: cfg.GangAbove, OneNode: cfg.OneNodeUpTo, LimitFactor: cfg.LimitFactor,
		Rendezvous: o.rendezvous}
	if cfg.Defrag != nil {
		set.info.Defrag = describeDefrag(cfg.Defrag)
	}
	if usesSlurmModel(pols) {
		set.info.Slurm = series.Describe()
	}
	if o.sacct != "" {
		err = o.loadSacct(set)
	} else {
		err = o.scale(set, raw)
	}
	if err != nil {
		return nil, err
	}
	if q := o.quotaSet; q != nil {
		set.cfg.Quota = &q.sim
		set.info.Quota, set.info.OwnerBound, set.info.QuotaIdle = describeQuota(q), q.sim.OwnerBound(), q.idle > 0
	}
	return set, nil
}

// readTrace reads the Philly table.
func (o *replayOptions) readTrace() (string, []traces.Job, error) {
	path, err := o.tracePath()
	if err != nil {
		return "", nil, err
	}
	raw, err := traces.ReadPhilly(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, usagef("trace %s does not exist (give --trace FILE, --traces DIR or $%s)", path, traces.EnvDir)
	}
	if err != nil {
		return "", nil, asUsage(err)
	}
	return path, raw, nil
}

// replayDisplayPath shows a path relative to the working directory when it is
// below it or next to it (../shared/data/traces/...), else as given.
func replayDisplayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(rel, "../../") {
		return path
	}
	return rel
}

// usesSlurmModel says whether a policy places jobs with the stock Slurm
// model on topology/tree: slurm, and gangtopo-slurm (the plugin's rewrite
// placed by it), with or without +defrag.
func usesSlurmModel(pols []string) bool {
	for _, p := range pols {
		base, _, _ := splitQuotaSuffix(strings.TrimSuffix(p, defragSuffix))
		if base == "slurm" || base == "gangtopo-slurm" {
			return true
		}
	}
	return false
}

// parseReplayPolicies reads --policies: known names, each once.
func parseReplayPolicies(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if base, ok := strings.CutSuffix(p, defragSuffix); ok && slices.Contains(defragPolicies, base) {
			// the policy with the controller's defragmentation
		} else if !slices.Contains(replayPolicies, p) && !validQuotaPolicy(p) {
			return nil, usagef("--policies: unknown policy %q (want one of %s; gangtopo and gangtopo-slurm also with %s or +quota, the gang policies with +hard)", p, strings.Join(replayPolicies, ", "), defragSuffix)
		}
		if slices.Contains(out, p) {
			return nil, usagef("--policies: %s given twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// config builds the replay configuration from the flags.
func (o *replayOptions) config() (queue.Config, error) {
	sd, err := queue.ParseSlowdown(o.slowdown)
	if err != nil {
		return queue.Config{}, usagef("--slowdown: %v", err)
	}
	opt, err := request.ParseOption(o.gangTopology)
	if err != nil {
		return queue.Config{}, usagef("--gang-topology: %v", err)
	}
	switch {
	case !(o.limitFactor > 0):
		return queue.Config{}, usagef("--limit-factor %g: want a positive number", o.limitFactor)
	case o.gangAbove < 0:
		return queue.Config{}, usagef("--gang-above %d: want 0 or more GPUs", o.gangAbove)
	case o.cpusPerGPU < 1:
		return queue.Config{}, usagef("--cpus-per-gpu %d: want at least 1", o.cpusPerGPU)
	case o.rendezvous <= 0:
		return queue.Config{}, usagef("--rendezvous-timeout %s: want a positive duration", o.rendezvous)
	case o.oneNodeUpTo < 0:
		return queue.Config{}, usagef("--one-node-up-to %d: want 0 or more GPUs", o.oneNodeUpTo)
	case o.compress < 0:
		return queue.Config{}, usagef("--compress %g: want a positive factor", o.compress)
	}
	cfg := queue.Config{Slowdown: sd, LimitFactor: o.limitFactor, GangOption: opt, GangAbove: o.gangAbove,
		CPUsPerGPU: o.cpusPerGPU, RendezvousTimeout: o.rendezvous.Seconds(), OneNodeUpTo: o.oneNodeUpTo}
	if o.gangAbove == 0 {
		cfg.GangAbove = -1 // every job is a gang; Defaults reads 0 as "unset"
	}
	return cfg.Defaults(), nil
}

// tracePath is --trace, else the Philly table in the trace directory.
func (o *replayOptions) tracePath() (string, error) {
	if o.trace != "" {
		return o.trace, nil
	}
	dir, err := traces.Dir(o.traces)
	if err != nil {
		return "", asUsage(err)
	}
	return filepath.Join(dir, traces.PhillyJobs), nil
}

// scale keeps the jobs submitted in [--from, --to), sorts them by submit
// time (file order on ties) and compresses their submit times.
func (o *replayOptions) scale(set *replaySetup, raw []traces.Job) error {
	kept, origin, err := o.window(raw, set.info.Trace)
	if err != nil {
		return err
	}
	var accounts []string
	if o.quotaSet != nil {
		if kept, accounts, err = o.quotaSet.assignAccounts(kept, origin, set.cluster.NumGPUs()); err != nil {
			return err
		}
	}
	jobs := make([]queue.Job, len(kept))
	for i, j := range kept {
		jobs[i] = queue.Job{Name: j.At, Submit: j.Submit.Sub(origin).Seconds(), Duration: j.Duration.Seconds(), GPUs: j.GPUs}
		if accounts != nil {
			jobs[i].Account = accounts[i]
		}
	}
	gpus := set.cluster.NumGPUs()
	set.info.Jobs, set.info.Trace0, set.info.Trace1 = len(jobs), kept[0].Submit, kept[len(kept)-1].Submit
	peak := queue.PeakLoad(jobs, gpus, queue.PeakWindow)
	if o.compress > 0 {
		set.runs = []*replayRun{newReplayRun(jobs, gpus, o.compress, peak)}
		return nil
	}
	loads, err := parseReplayLoads(o.peakLoad)
	if err != nil {
		return err
	}
	for _, load := range loads {
		k, err := queue.CompressionFor(jobs, gpus, load)
		if err != nil {
			return usagef("--peak-load: %v", err)
		}
		set.runs = append(set.runs, newReplayRun(jobs, gpus, k, peak))
	}
	return nil
}

// window keeps the jobs submitted in [--from, --to), sorted by submit
// time (file order on ties), and returns the time origin: --from, else
// the first submit.
func (o *replayOptions) window(raw []traces.Job, name string) ([]traces.Job, time.Time, error) {
	from, err := parseReplayTime("--from", o.from)
	if err != nil {
		return nil, from, err
	}
	to, err := parseReplayTime("--to", o.to)
	if err != nil {
		return nil, from, err
	}
	var kept []traces.Job
	for _, j := range raw {
		if (o.from == "" || !j.Submit.Before(from)) && (o.to == "" || j.Submit.Before(to)) {
			kept = append(kept, j)
		}
	}
	if len(kept) == 0 {
		return nil, from, usagef("no job of %s was submitted in the window --from %q --to %q", name, o.from, o.to)
	}
	sort.SliceStable(kept, func(a, b int) bool { return kept[a].Submit.Before(kept[b].Submit) })
	if o.from == "" {
		from = kept[0].Submit
	}
	return kept, from, nil
}

// newReplayRun compresses the jobs (trace seconds) by k.
func newReplayRun(jobs []queue.Job, gpus int, k, tracePeak float64) *replayRun {
	r := &replayRun{compress: k, peak: k * tracePeak, jobs: queue.Compress(jobs, 0, k)}
	r.offered = queue.OfferedLoad(r.jobs, gpus)
	return r
}

// parseReplayLoads reads --peak-load: positive numbers, comma-separated.
func parseReplayLoads(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, usagef("--peak-load %q: want positive numbers, comma-separated", list)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseReplayTime reads a --from/--to value in the trace's clock (UTC).
func parseReplayTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, strings.TrimSpace(v)); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("%s %q: want YYYY-MM-DD or YYYY-MM-DD HH:MM:SS", flag, v)
}
