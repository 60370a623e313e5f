package slurmscale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/tests/tools/docsection"
)

// Each run's figures are kept as a JSON file of their own in the results
// directory (docs/bench/scale/<release>-<shape>-<nodes>.json, with
// -share<percent> for a run whose controller had --max-rpc-share), and the
// document's section is rendered from every file there: a run at one size
// replaces only its own file, and the tables show how each figure grows
// with the nodes and the backlog.

// Save writes r into dir.
func Save(dir string, r *Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s-%s-%d", r.Release, r.Shape, r.Nodes)
	if r.MaxRPCShare > 0 {
		name += fmt.Sprintf("-share%g", r.MaxRPCShare)
	}
	path := filepath.Join(dir, name+".json")
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

// Load reads every result in dir, ordered by release, shape and nodes.
func Load(dir string) ([]*Result, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, &r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Release != b.Release {
			return a.Release < b.Release
		}
		if a.Shape != b.Shape {
			return a.Shape < b.Shape
		}
		if a.Nodes != b.Nodes {
			return a.Nodes < b.Nodes
		}
		return a.MaxRPCShare < b.MaxRPCShare
	})
	return out, nil
}

// Section is the name of the document's section.
const Section = "slurm-scale"

// WriteDoc renders every result in dir into doc's section.
func WriteDoc(doc, dir string) error {
	rs, err := Load(dir)
	if err != nil {
		return err
	}
	return docsection.Replace(doc, Section, Render(rs))
}

// Render is the section's text.
func Render(rs []*Result) string {
	var b strings.Builder
	b.WriteString(renderIntro)
	b.WriteString("\n### The lab\n\n| Slurm | nodes | GPUs | date | start s (batch) | processes | lab RSS MiB | slurmd MiB each | slurmctld MiB start / end | run s | stop s |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		s := r.Start
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %.1f (%d) | %d | %.0f | %.1f | %.0f / %.0f | %.0f | %.1f |\n", r.Release, r.nodesCell(), r.GPUs, r.Date,
			s.WallS, s.Batch, s.Procs, s.RSSMiB, s.SlurmdMiB, s.CtldMiB, s.CtldEndMiB, r.ElapsedS, s.StopWallS)
	}
	b.WriteString("\n### Submissions, plugins on and off\n\n" + renderThroughputNote +
		"\n| Slurm | nodes | held jobs each | jobs/s off / on | ratio (target >= 0.95) | slurmctld µs per submission (sdiag) off / on | slurmctld CPU ms per submission off / on | plugin in slurmctld p50 / p99 / max µs (calls) | engine p50 / p99 µs | decided by the engine (on) / no decision (off) | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		t := r.Throughput
		rate := func(wall float64) float64 { return float64(t.Jobs) / max(wall, 1e-9) }
		fmt.Fprintf(&b, "| %s | %s | %d | %.1f / %.1f | **%.3f** %s | %.0f / %.0f | %.2f / %.2f | %.0f / %.0f / %.0f (%d) %s | %.0f / %.0f | %d of %d / %d of %d | %.1f |\n",
			r.Release, r.nodesCell(), t.Jobs, rate(t.WallOffS), rate(t.WallOnS), t.Ratio, verdict(t.Ratio >= 0.95),
			t.SubmitOff.AveUs(), t.SubmitOn.AveUs(), t.CtldCPUOffMs, t.CtldCPUOnMs, t.TookP50, t.TookP99, t.TookMax, t.Calls,
			verdict(t.TookP99 < 1000), t.EngineP50, t.EngineP99, t.VerdictsOn.Engine, t.SubmitOn.Count, t.VerdictsOff.None, t.SubmitOff.Count, t.Load)
	}
	b.WriteString("\n### A backlog under the stream, plugins on and off\n\n" + renderWindowNote +
		"\n| Slurm | nodes | backlog (window s) | plugins | sbatch wall s / µs per submission (sdiag) | pending / running at the end | backfill cycles, mean / max ms, jobs tested (mean) | main cycle mean ms | controller's RPCs a minute / share of slurmctld's RPC time (target < 5%) / of the window's wall time | poll mean / max ms (squeue ms, MB; jobs' age max s) | poll CPU ms own / commands | duty round mean / max ms | changes (audit) | plugin failures (passed as submitted) | helpless re-bound | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var missing []string
	for _, r := range rs {
		for i, w := range r.Windows {
			b.WriteString(windowRow(r, w))
			if w.Plugins && (i+1 == len(r.Windows) || r.Windows[i+1].Plugins || r.Windows[i+1].Backlog != w.Backlog) {
				missing = append(missing, fmt.Sprintf("%s at %s nodes, backlog %d", r.Release, r.nodesCell(), w.Backlog))
			}
		}
	}
	b.WriteString("\n### Where the controller's RPC time goes\n\n" + renderCostNote +
		"\n| Slurm | nodes | backlog | job listings (squeue): a minute, ms each | node listings (sinfo): a minute, ms each | updates (scontrol update): a minute, ms each | the rest: a minute, ms each | all: ms a minute (share of slurmctld's RPC time) |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		for _, w := range r.Windows {
			if w.Plugins && w.Sdiag != nil {
				b.WriteString(costRow(r, w))
			}
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "\nNo plugins-off window (the run stopped before it was recorded; its log says why): %s.\n", strings.Join(missing, "; "))
	}
	return b.String()
}

// nodesCell is the nodes column: the size, and the controller's
// --max-rpc-share where the run set it.
func (r *Result) nodesCell() string {
	if r.MaxRPCShare > 0 {
		return fmt.Sprintf("%d (share <= %g%%)", r.Nodes, r.MaxRPCShare)
	}
	return fmt.Sprintf("%d", r.Nodes)
}

func windowRow(r *Result, w Window) string {
	mode, ctl := "off", "-"
	if w.Plugins {
		mode = "on"
	}
	d := w.Sdiag
	if d == nil {
		d = &Sdiag{}
	}
	c := w.Controller
	busy := 100 * float64(w.ControllerRPC.TotalUs) / max(w.WindowS*1e6, 1)
	share := fmt.Sprintf("%.0f / %.2f%% / %.2f%%", w.PerMinute(w.ControllerRPC), w.Share(), busy)
	if w.Plugins {
		share += " " + verdict(w.Share() < 5)
		age := "-"
		if c.JobsAge.N > 0 {
			age = fmt.Sprintf("%.1f", c.JobsAge.Max/1000)
		}
		ctl = fmt.Sprintf("%.0f / %.0f (%.0f, %.1f; %s)", c.Polls.Mean, c.Polls.Max, c.JobsCmd.Mean, c.JobsBytes.Mean/1e6, age)
	} else {
		share += " (harness only)"
	}
	cpu, rounds, changes := "-", "-", "-"
	if w.Plugins {
		cpu = fmt.Sprintf("%.0f / %.0f", c.CPUOwnMs, c.CPUChildMs)
		rounds = fmt.Sprintf("%.0f / %.0f (%d) %s", c.Rounds.Mean, c.Rounds.Max, c.Rounds.N, verdict(c.Rounds.Max+c.Polls.Max < 5000))
		changes = actionsText(c.Actions)
	}
	return fmt.Sprintf("| %s | %s | %d (%.0f) | %s | %.0f / %.0f | %d / %d | %d, %.0f / %.0f, %d | %.1f | %s | %s | %s | %s | %s | %s | %d | %.1f |\n",
		r.Release, r.nodesCell(), w.Backlog, w.WindowS, mode, w.SubmitWallS, w.SubmitAveUs, w.Pending, w.Running,
		d.Backfill.Cycles, float64(d.Backfill.MeanUs)/1000, float64(d.Backfill.MaxUs)/1000, d.Backfill.DepthMean,
		float64(d.Main.MeanUs)/1000, share, ctl, cpu, rounds, changes, failuresText(w), w.HelplessRebound, w.Load)
}

func actionsText(a map[string]int) string {
	if len(a) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range a {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

const renderIntro = `## Slurm at the size of a site: hundreds of emulated nodes

Measured with ` + "`make bench-scale`" + ` (tests/slurmscale; ` + "`SCALE_NODES`, `SCALE_BACKLOGS`" + `, ` + "`SLURM_SERIES`" + `):
a lab of emulated nodes (a real slurmctld and one slurmd per node, 8 GPUs each; a fat tree of
16 nodes a leaf and 16 leaves a spine) on this 2-core machine, the gangtopo plugins and the
controller daemon (5 s poll, every duty on that needs no accounting: re-binding, defragmentation's
policy for gangs of 16 GPUs or more; quota needs slurmdbd and is off) beside it. Each row is one
run's: every ratio is read within one slurmctld. Plugins off = job_submit/gangtopo and the SPANK
plugin out of slurm.conf (` + "`scontrol reconfigure`" + `) and the controller stopped: Slurm as a site
without gangtopo runs it. Each size's run replaces its own file in ` + "`bench/scale/`" + `; the
tables are rendered from every file there. Rows whose nodes say ` + "`share <= N%`" + ` ran the controller with
` + "`--max-rpc-share N`" + ` (` + "`make bench-scale SCALE_RPC_SHARE=N`" + `; [controller.md](controller.md#holding-the-controllers-share-of-slurmctlds-rpc-time)),
in files and rows of their own.
`

const renderThroughputNote = `Held jobs (` + "`sbatch -H --gpus=G`" + `, G from the Philly mix) on the empty cluster, in four
alternating batches (on, off, off, on), 8 sbatch processes at a time. Jobs/s and the ratio are the
client's view (sbatch's process start and munge included); sdiag's time per submission is
slurmctld's (from the RPC's arrival to its answer, locks included), its counters reset before each
batch. The plugin's time per call is what it logged inside slurmctld (target p99 < 1 ms). A run
counts only if every job submitted with the plugins carries the engine's decision line and none
without does (the last column): a plugin that never reached the engine would look fast.
`

const renderWindowNote = `After the throughput phase the lab is filled to 90% of its GPUs with long jobs (mostly whole
nodes and gangs), then for each backlog size the backlog is submitted (the Philly mix of GPUs;
70% plain, 5% leaf gangs of 16 or 32 GPUs, 10% arrays of 20 tasks two at a time, 15% that no
re-binding can help: held or waiting on a dependency), first with the plugins, then cancelled and
submitted again without them. Its submission is measured, then a window of steady load: every 2 s
one backlog job submitted and the oldest cancelled, every 10 s a fill job cancelled and replaced
(room opens, bindings go stale). sdiag's counters are reset at the window's start. The controller
runs as root here (no accounting), so its RPCs are counted by the message types it sends
(REQUEST_JOB_INFO, NODE_INFO, PARTITION_INFO, UPDATE_JOB, requeues, reservations, ping); the rows
with the plugins off show what the harness alone sends of those types. Poll = one controller cycle
(the node listing, the job listing or as much of it as a third of the interval allows, the snapshot
built and published; squeue ms and MB: the job listings taken in the window; jobs' age: how old the
job listing a snapshot used was at most, "-" in runs before the listing ran beside the polls); CPU =
per poll, the daemon's own and the Slurm commands it ran. The share of the window's wall time is the
controller's RPC time (lock waits included) over the window's length: how much of slurmctld's time
its RPCs hold. A duty round runs after each poll with a new job listing (met: the longest poll and
round fit one 5 s cycle). Helpless re-bound = held or dependent jobs the controller re-bound (must
be 0).
`

const renderCostNote = `The plugins-on windows above, the controller's RPCs by message type (sdiag; each RPC's time from
its arrival to its answer, waits for slurmctld's locks included): its job listing (REQUEST_JOB_INFO),
its node listing (REQUEST_NODE_INFO and REQUEST_PARTITION_INFO: sinfo sends both), its changes
(REQUEST_UPDATE_JOB: re-bindings, pins, quota moves) and the rest (ping, configuration,
reservations, requeues).
`

// costRow splits a plugins-on window's controller RPCs by what they are
// for: listing jobs, listing nodes, changing jobs, the rest.
func costRow(r *Result, w Window) string {
	jobs := w.Sdiag.TypesTotal([]string{"REQUEST_JOB_INFO"})
	nodes := w.Sdiag.TypesTotal([]string{"REQUEST_NODE_INFO", "REQUEST_PARTITION_INFO"})
	updates := w.Sdiag.TypesTotal([]string{"REQUEST_UPDATE_JOB"})
	rest := w.ControllerTypes
	for _, x := range []RPC{jobs, nodes, updates} {
		rest.Count -= x.Count
		rest.TotalUs -= x.TotalUs
	}
	cell := func(x RPC) string {
		return fmt.Sprintf("%.1f, %.1f", w.PerMinute(x), x.AveUs()/1000)
	}
	perMinuteMs := float64(w.ControllerRPC.TotalUs) / 1000 * 60 / max(w.WindowS, 1e-9)
	return fmt.Sprintf("| %s | %s | %d | %s | %s | %s | %s | %.0f (%.2f%%) |\n", r.Release, r.nodesCell(), w.Backlog,
		cell(jobs), cell(nodes), cell(updates), cell(rest), perMinuteMs, w.Share())
}

func failuresText(w Window) string {
	if !w.Plugins {
		return "-"
	}
	if len(w.Failures) == 0 {
		return "0"
	}
	return actionsText(w.Failures)
}
