package main

import (
	"errors"
	"fmt"
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
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
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
	spares                  string // --spares: TIER:N (replay_spares.go)
	wholeNodeGangs          bool   // --whole-node-gangs
	slurmSeries             string
	output                  string
	compressSet             bool // --compress given (0 then is bad input, not "unset")
	svg                     string
	html                    string // --html: the replay's page (replay_html.go)
	// sustain: search each policy's sustainable load (replay_sustain.go)
	// from sustainFrom to within sustainTol; peakLoadSet: --peak-load was
	// given (it cannot be with --sustain).
	sustain                 bool
	sustainFrom, sustainTol float64
	peakLoadSet             bool
	// a site's history (replay_sacct.go)
	sacct, scontrolConfig, nameSalt, skippedFile, timing string
	keepNames, checkStarts                               bool
	policiesGiven, slowdownGiven                         bool
	failures                                             failureFlags
}

func newReplayCmd() *cobra.Command {
	o := replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay --topology cluster.yaml [--trace philly.csv] [--policies gangtopo,slurm,...]",
		Short: "Replay the Philly trace over time through several policies: queue waits, utilisation, locality",
		Long: `Replay the Philly job trace (submit time, duration, GPUs) on a cluster file through
each policy, with a Slurm-like queue (FIFO by submit order, EASY backfill, time
limits = durations) for the all-or-nothing policies and Kubernetes' pod queue for
naive-pods. Jobs run for their duration times a placement slowdown: by default
the grounded model (each job's collectives, the cluster file's link speeds,
published measurements), every figure given at its low, central and high band.
Submit times are compressed so that the busiest week of the trace loads the
cluster to --peak-load (or by --compress); --sustain instead searches the
highest load each policy sustains. See docs/replay.md.

Policies: gangtopo (the engine), slurm (stock Slurm, topology/tree, as
checked against the placements recorded on the series --slurm-series names),
slurm-flat (stock Slurm without a topology plugin), naive-pods (Kubernetes
without gang scheduling). gangtopo and gangtopo-slurm also with +defrag (the
controller's defragmentation), +quota (dynamic GPU quotas) or both
(+quota+defrag); the gang policies also with +hard (Slurm's hard GrpTRES
limits at each account's share); static is stock Slurm on static per-team
partitions; --quota says how the trace's jobs are dealt to accounts.

--sacct FILE replays a site's own history instead (sacct --json or sacct -P
output), at its own pace with slurmctld's scheduling times, names hashed;
--check-starts compares the slurm model's start of each job with the
recorded one. --html FILE also writes the replay as one self-contained
page of charts. See docs/replay.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.compressSet = cmd.Flags().Changed("compress")
			o.peakLoadSet = cmd.Flags().Changed("peak-load")
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
	f.StringVar(&o.slowdown, "slowdown", "grounded", "placement slowdown: "+replaySlowdownHelp)
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
	f.StringVarP(&o.output, "output", "o", "table", outputHelp("table", "json", "csv", "markdown"))
	f.StringVar(&o.svg, "svg", "", "with several --peak-load values: also draw each policy's waits and utilisation against the load into this `file` (SVG)")
	f.StringVar(&o.html, "html", "", "also write the replay as one self-contained HTML page into this `file`: waits by gang size against load (give --peak-load several loads), the slowdown band, stranded GPU-hours and free whole nodes and leaves over time")
	f.BoolVar(&o.sustain, "sustain", false, "search each policy's sustainable load: the highest peak load at which the mean wait stays within 60 min and 16+ GPU gangs within 4 h (instead of --peak-load)")
	f.Float64Var(&o.sustainFrom, "sustain-from", 1, "--sustain: the peak load the search starts from")
	f.Float64Var(&o.sustainTol, "sustain-tolerance", 0.02, "--sustain: bisect until the highest load sustained and the lowest not are this close")
	f.StringVar(&o.sacct, "sacct", "", "replay a site's own job history instead of the Philly trace: the output of sacct --json or sacct -P (see docs/replay.md); default policies "+sacctPolicies)
	f.BoolVar(&o.keepNames, "keep-names", false, "--sacct: keep user and account names (default: hashed)")
	f.StringVar(&o.nameSalt, "name-salt", "", "--sacct: hash names keyed with this secret (HMAC-SHA-256), so that no one can confirm a guessed name")
	f.StringVar(&o.scontrolConfig, "scontrol-config", "", "--sacct: the output of scontrol show config on the cluster: its scheduler parameters and boot time (default: Slurm's defaults)")
	f.StringVar(&o.timing, "timing", "slurm", "--sacct: when passes run: slurm (as slurmctld: main pass on submit and end, a backfill cycle every bf_interval with a reservation for every job it tests), easy (the same times, EASY backfill: one reservation), events (a pass at every event)")
	f.BoolVar(&o.checkStarts, "check-starts", false, "--sacct: compare the slurm policy's predicted start of each job with the recorded one (slowdown none unless --slowdown is given)")
	f.StringVar(&o.failures.rate, "node-failures", "", "take nodes down under running jobs at this rate: llama3 (Meta's Llama 3 report: 419 unexpected interruptions in 54 days on 2,048 servers of 8 GPUs) or failures per node-hour; a table of the restarts follows the report")
	f.DurationVar(&o.failures.repair, "repair", 24*time.Hour, "--node-failures: how long a failed node stays down")
	f.Uint64Var(&o.failures.seed, "failure-seed", 1, "--node-failures: the seed the failures are drawn with")
	f.BoolVar(&o.failures.atOnce, "restart-at-once", false, "--node-failures with --requeue delay: the controller makes a requeued job eligible at its next cycle instead of after Slurm's requeue delay (gangtopo.yaml rebind.restart_at_once)")
	f.BoolVar(&o.failures.hook, "restart-hook", false, "--node-failures: the controller re-binds a gang requeued after a node failure at the requeue, before Slurm may start it (slurm.conf EpilogSlurmctld runs gangtopo wake; docs/admin.md), instead of at its next cycle")
	f.StringVar(&o.failures.requeue, "requeue", "delay", "--node-failures: how Slurm requeues a failed node's jobs: delay (eligible 121 s later, in submit order: every series) or expedite (eligible at once, at the top of the queue: Slurm 25.11+ with SlurmctldParameters=enable_expedited_requeue and --requeue=expedite)")
	f.StringVar(&o.spares, "spares", "leaf:1", "the spare nodes policy "+sparesPolicy+" keeps (gangtopo.yaml's spares:): TIER:N, N nodes in each domain of the tier")
	f.BoolVar(&o.wholeNodeGangs, "whole-node-gangs", false, "the gangtopo-slurm policies place a gang that asks a GPU total, a multiple of a node's GPUs, on whole nodes (-N G/k --gpus-per-node=k; gangtopo.yaml whole_node_gangs)")
	f.StringVar(&o.skippedFile, "skipped", "", "--sacct: write every job left out of the replay, with the reason, to this file (tab-separated)")
	return cmd
}

// replaySetup is everything a replay needs, resolved from the flags: one
// run per load, each replaying every policy.
type replaySetup struct {
	// traceJobs are the jobs replayed at trace speed, tracePeak their
	// busiest week's load (the --sustain search compresses them itself).
	traceJobs               []queue.Job
	tracePeak               float64
	sustainFrom, sustainTol float64
	cluster                 *topology.Cluster
	partitions              []queue.Partition // the static policy's, by account
	failures                []*queue.Failures // --node-failures, by run (nil: none)
	spares                  jobsubmit.Spares  // --spares, for sparesPolicy
	wholeNodeGangs          bool              // --whole-node-gangs, for the deployed path
	policies                []string
	cfg                     queue.Config
	slowdown                replaySlowdown
	info                    replayInfo
	runs                    []*replayRun
	hist                    *historyInfo // --sacct
}

// replayRun is the trace at one load and what each policy made of it, at
// each band of the slowdown model.
type replayRun struct {
	compress, peak, offered float64
	jobs                    []queue.Job
	bands                   []replayBand // by band: one, or low, central, high
}

// replayBand is what each policy made of a run's jobs at one band.
type replayBand struct {
	results []*queue.Result // by policy
	elapsed []time.Duration
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
	// PeakWindow is what the peak load is measured over (seconds): a
	// week, or the jobs' span when shorter
	PeakWindow float64
	// History describes a --sacct replay's jobs and timing ("" for Philly)
	History string
	// Failures describes --node-failures ("" without)
	Failures string
	// WholeNodeGangs is --whole-node-gangs
	WholeNodeGangs bool
}

func runReplay(w, errw io.Writer, o replayOptions) error {
	set, err := o.setup()
	if err != nil {
		return err
	}
	if o.sustain {
		return runSustain(set, w, &o)
	}
	if err := runReplays(set, errw); err != nil {
		return err
	}
	if err := writeFile(o.html, set.writeHTML); err != nil {
		return err
	}
	if len(set.runs) > 1 {
		sw := &replaySweep{set: set}
		if err := writeFile(o.svg, sw.writeSVG); err != nil {
			return err
		}
		switch o.output {
		case "csv":
			if err := sw.writeCSV(w); err != nil {
				return err
			}
		case "json":
			if err := sw.writeJSON(w); err != nil {
				return err
			}
		case "markdown":
			sw.writeMarkdown(w)
		default:
			sw.writeTable(w)
		}
		return set.allRejected()
	}
	rep := newReplayReports(set, set.runs[0])
	switch o.output {
	case "csv":
		if err := rep.writeCSV(w); err != nil {
			return err
		}
	case "json":
		if err := rep.writeJSON(w); err != nil {
			return err
		}
	case "markdown":
		rep.writeMarkdown(w)
	default:
		rep.writeTable(w)
	}
	if o.output == "table" || o.output == "markdown" {
		writeFailures(w, set, set.runs[0], o.output == "markdown")
	}
	if err := set.allRejected(); err != nil {
		return err
	}
	if set.hist != nil && (o.output == "table" || o.output == "markdown") {
		return set.hist.write(w, set, o.skippedFile)
	}
	return nil
}

// allRejected fails a replay in which a policy rejected every job (none
// fits even the empty cluster: --cpus-per-gpu 1000, say): its figures
// describe nothing, and the report alone, exit 0, read as a result.
func (set *replaySetup) allRejected() error {
	for _, run := range set.runs {
		if len(run.bands) == 0 || len(run.jobs) == 0 {
			continue
		}
		for i, res := range run.bands[0].results {
			s := queue.Summarize(res)
			if s.Jobs > 0 || s.Rejected == 0 {
				continue
			}
			r := set.cfg.Request(&run.jobs[0])
			why := place.New(set.cluster, place.Options{}).Place(occupancy.New(set.cluster), r).Message
			return fmt.Errorf("replay: %s rejected every job (%d of %d): none fits the empty cluster; the first (%s): %s",
				set.policies[i], s.Rejected, s.Rejected, r.String(), why)
		}
	}
	return nil
}

// setup checks the flags and loads the cluster and the trace. Every
// problem here is the user's to fix (exit status 2).
func (o *replayOptions) setup() (*replaySetup, error) {
	if err := checkOutput(o.output, "table", "json", "csv", "markdown"); err != nil {
		return nil, err
	}
	if o.svg != "" && !strings.Contains(o.peakLoad, ",") {
		return nil, usagef("--svg draws waits against load: give --peak-load several loads (e.g. 1,1.1,1.2)")
	}
	if err := checkWritable("--svg", o.svg); err != nil {
		return nil, err
	}
	if err := checkWritable("--html", o.html); err != nil {
		return nil, err
	}
	if o.html != "" && o.sustain {
		return nil, usagef("--html draws replays at given loads: leave out --sustain (or --html)")
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
	cfg, sd, err := o.config()
	if err != nil {
		return nil, err
	}
	c, err := loadCluster(o.topology)
	if err != nil {
		return nil, err
	}
	if t := cfg.GangOption.Tier; t != 0 && !c.HasTier(t) {
		// place refuses such a request; the replay would reject every gang
		return nil, usagef("--gang-topology %s: cluster %s has no %s domains (its tiers: %s)", o.gangTopology, c.Name, t, clusterTiers(c))
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
	quotaPol := slices.ContainsFunc(pols, func(p string) bool {
		_, _, ok := splitQuotaSuffix(strings.TrimSuffix(p, defragSuffix))
		return ok || p == staticPolicy
	})
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
	cfg.RecordUse = o.html != "" // the page draws the free nodes over time
	set := &replaySetup{cluster: c, policies: pols, cfg: cfg, slowdown: sd, wholeNodeGangs: o.wholeNodeGangs}
	if slices.Contains(pols, sparesPolicy) {
		if set.spares, err = parseReplaySpares(o.spares, c); err != nil {
			return nil, err
		}
	}
	set.info = replayInfo{Topology: o.topology, Trace: replayDisplayPath(path), Slowdown: sd.describe() + assumedSpeeds(c, sd),
		GangOption: cfg.GangOption.String(), GangAbove: cfg.GangAbove, OneNode: cfg.OneNodeUpTo, LimitFactor: cfg.LimitFactor,
		Rendezvous: o.rendezvous, WholeNodeGangs: o.wholeNodeGangs}
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
	if err := o.failures.drawFailures(set); err != nil {
		return nil, err
	}
	if q := o.quotaSet; q != nil {
		set.cfg.Quota = &q.sim
		set.info.Quota, set.info.OwnerBound, set.info.QuotaIdle = describeQuota(q), q.sim.OwnerBound(), q.idle > 0
	}
	if slices.Contains(pols, staticPolicy) {
		if set.partitions, err = staticPartitions(o.topology, c, o.quotaSet); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// staticPartitions builds each account's static partition: its nodes
// (replayQuota.nodes) as a cluster of their own, cut from the cluster
// file's spec.
func staticPartitions(path string, c *topology.Cluster, q *replayQuota) ([]queue.Partition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, asUsage(err)
	}
	defer f.Close()
	spec, err := topology.ParseSpec(f, path)
	if err != nil {
		return nil, asUsage(err)
	}
	var parts []queue.Partition
	for r, nodes := range q.nodes {
		in := map[string]bool{}
		for _, id := range nodes {
			in[c.Nodes[id].Name] = true
		}
		pc, err := topology.Build(spec.Subset(c.Name+"/"+quotaAccount(r), func(n string) bool { return in[n] }))
		if err != nil {
			return nil, fmt.Errorf("static partition of %s: %w", quotaAccount(r), err)
		}
		parts = append(parts, queue.Partition{Account: quotaAccount(r), Cluster: pc})
	}
	return parts, nil
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
		if base == "slurm" || base == "gangtopo-slurm" || base == sparesPolicy || base == staticPolicy {
			return true
		}
	}
	return false
}

// staticPolicy is stock Slurm on static per-team partitions (each
// account of --quota its own nodes, sized by its share).
const staticPolicy = "static"

// parseReplayPolicies reads --policies: known names, each once.
func parseReplayPolicies(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if !validReplayPolicy(p) {
			return nil, usagef("--policies: unknown policy %q (want one of %s, %s, %s; gangtopo and gangtopo-slurm also with %s, +quota or +quota%s, the gang policies with +hard)",
				p, strings.Join(replayPolicies, ", "), staticPolicy, sparesPolicy, defragSuffix, defragSuffix)
		}
		if slices.Contains(out, p) {
			return nil, usagef("--policies: %s given twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// validReplayPolicy says whether p names a policy: a base policy, static,
// a base with +hard or +quota, or gangtopo's with +defrag (after +quota,
// when both).
func validReplayPolicy(p string) bool {
	if base, ok := strings.CutSuffix(p, defragSuffix); ok {
		b, mode, _ := splitQuotaSuffix(base)
		return slices.Contains(defragPolicies, b) && mode != queue.QuotaHard
	}
	return p == staticPolicy || p == sparesPolicy || slices.Contains(replayPolicies, p) || validQuotaPolicy(p)
}

// config builds the replay configuration from the flags, and the
// slowdown model (the configuration of each band is sd.config's).
func (o *replayOptions) config() (queue.Config, replaySlowdown, error) {
	sd, err := parseReplaySlowdown(o.slowdown)
	if err != nil {
		return queue.Config{}, sd, err
	}
	opt, err := request.ParseOption(o.gangTopology)
	if err != nil {
		return queue.Config{}, sd, usagef("--gang-topology: %v", err)
	}
	switch {
	case !(o.limitFactor > 0):
		return queue.Config{}, sd, usagef("--limit-factor %g: want a positive number", o.limitFactor)
	case o.gangAbove < 0:
		return queue.Config{}, sd, usagef("--gang-above %d: want 0 or more GPUs", o.gangAbove)
	case o.cpusPerGPU < 1:
		return queue.Config{}, sd, usagef("--cpus-per-gpu %d: want at least 1", o.cpusPerGPU)
	case o.rendezvous <= 0:
		return queue.Config{}, sd, usagef("--rendezvous-timeout %s: want a positive duration", o.rendezvous)
	case o.oneNodeUpTo < 0:
		return queue.Config{}, sd, usagef("--one-node-up-to %d: want 0 or more GPUs", o.oneNodeUpTo)
	case o.compress < 0 || o.compressSet && !(o.compress > 0) || math.IsInf(o.compress, 0) || math.IsNaN(o.compress):
		return queue.Config{}, sd, usagef("--compress %g: want a positive factor", o.compress)
	case o.sustain && (o.compress > 0 || o.peakLoadSet):
		return queue.Config{}, sd, usagef("--sustain searches the load itself: leave out --peak-load and --compress")
	case o.sustain && (!(o.sustainFrom > 0) || math.IsInf(o.sustainFrom, 0)):
		return queue.Config{}, sd, usagef("--sustain-from %g: want a positive peak load", o.sustainFrom)
	case o.sustain && !(o.sustainTol > 0 && o.sustainTol < o.sustainFrom):
		return queue.Config{}, sd, usagef("--sustain-tolerance %g: want a positive number below --sustain-from (%g)", o.sustainTol, o.sustainFrom)
	}
	cfg := queue.Config{LimitFactor: o.limitFactor, GangOption: opt, GangAbove: o.gangAbove,
		CPUsPerGPU: o.cpusPerGPU, RendezvousTimeout: o.rendezvous.Seconds(), OneNodeUpTo: o.oneNodeUpTo}
	if o.gangAbove == 0 {
		cfg.GangAbove = -1 // every job is a gang; Defaults reads 0 as "unset"
	}
	return sd.config(cfg, 0).Defaults(), sd, nil
}

// assumedSpeeds notes, for the grounded model, the hardware whose link
// speeds are the default table's assumptions (docs/cluster-file.md).
func assumedSpeeds(c *topology.Cluster, sd replaySlowdown) string {
	if sd.bands == nil {
		return ""
	}
	var hw []string
	for i := range c.Nodes {
		if n := &c.Nodes[i]; n.SpeedsAssumed && !slices.Contains(hw, n.Hardware) {
			hw = append(hw, n.Hardware)
		}
	}
	if len(hw) == 0 {
		return ""
	}
	return " (the network speed of " + strings.Join(hw, ", ") + " is the default table's assumption: give its nics in the cluster file)"
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
		if kept, accounts, err = o.quotaSet.assignAccounts(kept, origin, set.cluster); err != nil {
			return err
		}
	}
	jobs := make([]queue.Job, len(kept))
	for i, j := range kept {
		// the name (file:line, the file without its directory) draws the
		// job's workload class (stepcost.Draw): the same trace replays the
		// same wherever it is read from
		jobs[i] = queue.Job{Name: filepath.Base(j.At), Submit: j.Submit.Sub(origin).Seconds(), Duration: j.Duration.Seconds(), GPUs: j.GPUs}
		if accounts != nil {
			jobs[i].Account = accounts[i]
		}
	}
	gpus := set.cluster.NumGPUs()
	set.info.Jobs, set.info.Trace0, set.info.Trace1 = len(jobs), kept[0].Submit, kept[len(kept)-1].Submit
	set.info.PeakWindow = queue.PeakWindowFor(jobs)
	peak := queue.PeakLoad(jobs, gpus, set.info.PeakWindow)
	set.traceJobs, set.tracePeak, set.sustainFrom, set.sustainTol = jobs, peak, o.sustainFrom, o.sustainTol
	if o.sustain {
		return nil
	}
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
