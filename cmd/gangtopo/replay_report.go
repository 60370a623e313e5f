package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Targets of issues 3 and 11: gangtopo, the engine and the deployed path,
// against stock Slurm (topology/tree).
const (
	replayTargetTight  = 0.95 // gangs in their tightest feasible domain
	replayTargetWait16 = 0.7  // mean wait of 16+ GPU gangs, as a fraction of slurm's
	replayReference    = "slurm"
	replayDeployed     = "gangtopo-slurm"
)

// replayReport is the outcome of one gangtopo replay run (one load) at
// one band of the slowdown model.
type replayReport struct {
	info      replayInfo
	cluster   *topology.Cluster
	run       *replayRun
	band      *replayBand
	bandIx    int
	bandLabel string // the band's name in the CSV
	rows      []replayRow
	// recorded summarises a history's own record (--sacct)
	recorded *queue.Summary
}

type replayRow struct {
	s       queue.Summary
	elapsed time.Duration
}

func newReplayReport(set *replaySetup, run *replayRun, band int) *replayReport {
	b := &run.bands[band]
	r := &replayReport{info: set.info, cluster: set.cluster, run: run, band: b, bandIx: band}
	r.bandLabel = r.bandName(set.slowdown)
	for i, res := range b.results {
		r.rows = append(r.rows, replayRow{queue.Summarize(res), b.elapsed[i]})
	}
	if set.hist != nil && run.compress == 1 {
		s := queue.Summarize(set.hist.recordedResult(run.jobs, set.cluster.NumGPUs()))
		s.Requeues, s.LostGPUHours = set.hist.recordedRequeues()
		r.recorded = &s
	}
	return r
}

// replayReports is a run's report at each band.
type replayReports struct {
	set  *replaySetup
	reps []*replayReport
}

func newReplayReports(set *replaySetup, run *replayRun) *replayReports {
	rr := &replayReports{set: set}
	for b := range run.bands {
		rr.reps = append(rr.reps, newReplayReport(set, run, b))
	}
	return rr
}

// central is the report at the central band.
func (rr *replayReports) central() *replayReport { return rr.reps[rr.set.slowdown.central()] }

// table merges one table over the bands (mergeBands).
func (rr *replayReports) table(f func(*replayReport) [][]string) [][]string {
	tables := make([][][]string, len(rr.reps))
	for i, r := range rr.reps {
		tables[i] = f(r)
	}
	return mergeBands(tables, rr.set.slowdown.central())
}

// tables are the report's tables, merged over the bands, in order; nil
// for a table that does not apply.
func (rr *replayReports) tables() [][][]string {
	var out [][][]string
	for _, f := range []func(*replayReport) [][]string{(*replayReport).mainTable, (*replayReport).classTable,
		(*replayReport).targets, (*replayReport).defragTable, (*replayReport).quotaTable, (*replayReport).accountTable,
		(*replayReport).historyTable} {
		out = append(out, rr.table(f))
	}
	return out
}

// header describes the run in a few lines.
func (r *replayReport) header() []string {
	h := replayHeader(r.info, r.cluster)
	if r.info.History != "" {
		return h
	}
	return append(append(h[:2:2], fmt.Sprintf("submit times compressed %.3gx: %s arrives at %.0f%% of the cluster's GPU capacity, the whole replay at %.0f%% on average",
		r.run.compress, replayBusiest(r.info.PeakWindow), 100*r.run.peak, 100*r.run.offered)), h[2:]...)
}

// replayBusiest names what the peak load is measured over: the busiest
// week, or, for jobs submitted over less than a week, all of them.
func replayBusiest(window float64) string {
	if window > 0 && window < queue.PeakWindow {
		return fmt.Sprintf("the window's %.1f h of submissions (less than the week the peak load is measured over, so measured over them)", window/3600)
	}
	return "the trace's busiest week"
}

// replayHeader describes what every run of a replay shares.
func replayHeader(in replayInfo, c *topology.Cluster) []string {
	h := []string{
		fmt.Sprintf("replay of %s on %s (%d nodes, %d GPUs)", in.Trace, c.Name, len(c.Nodes), c.NumGPUs()),
		fmt.Sprintf("%d jobs submitted %s .. %s (trace time)", in.Jobs, in.Trace0.Format("2006-01-02 15:04"), in.Trace1.Format("2006-01-02 15:04")),
		fmt.Sprintf("%s; jobs above %d GPUs ask for --gang-topology=%s; %s; time limit = %g x run time; naive-pods rendezvous timeout %s",
			replayOneNodeText(in.OneNode), in.GangAbove, in.GangOption, in.Slowdown, in.LimitFactor, in.Rendezvous),
	}
	if in.History != "" {
		h[1] = fmt.Sprintf("%d jobs eligible %s .. %s, replayed at their own pace", in.Jobs, in.Trace0.Format("2006-01-02 15:04:05"), in.Trace1.Format("2006-01-02 15:04:05"))
		h[2] = in.History + "; " + in.Slowdown
	}
	if in.WholeNodeGangs {
		h[2] += "; the deployed path puts gangs of a multiple of a node's GPUs on whole nodes (whole_node_gangs)"
	}
	if in.Defrag != "" {
		h[2] += "; " + in.Defrag
	}
	if in.Quota != "" {
		h[2] += "; " + in.Quota
	}
	if in.Slurm != "" {
		h = append(h, in.Slurm)
	}
	return h
}

func replayOneNodeText(n int) string {
	if n == 0 {
		return "jobs ask for a GPU count only (--gpus=G: the scheduler may split any job over nodes; naive-pods: one pod per GPU)"
	}
	return fmt.Sprintf("jobs of up to %d GPUs ask for one node (-N 1; naive-pods: one pod), bigger ones for a GPU count", n)
}

func replayMinutes(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	return strconv.FormatFloat(sec/60, 'f', 1, 64)
}

func replayHours(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	return strconv.FormatFloat(sec/3600, 'f', 2, 64)
}

func replayPct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64)
}

func replayNum(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }

// mainTable is the per-policy overview: header row, then one row each.
func (r *replayReport) mainTable() [][]string {
	t := [][]string{{"policy", "GPU util %", "useful %", "mean wait min", "wait 16+ min", "mean JCT h",
		"tightest %", "slowdown GPU-h", "stranded GPU-h", "held idle GPU-h", "deadlocks", "timeouts", "rebinds", "self-wait h", "rejected", "run s"}}
	for _, row := range r.rows {
		s := row.s
		t = append(t, []string{s.Policy, replayPct(s.Util), replayPct(s.Useful), replayMinutes(s.MeanWait), replayMinutes(s.Wait16), replayHours(s.MeanJCT),
			replayPct(s.Tight), replayNum(s.SlowdownGPUHours), replayNum(s.StrandedGPUHours), replayNum(s.HeldIdleGPUHours), strconv.Itoa(s.Deadlocks),
			strconv.Itoa(s.Timeouts), strconv.Itoa(s.Rebinds), strconv.FormatFloat(s.SelfWaitHours, 'f', 1, 64),
			strconv.Itoa(s.Rejected), strconv.FormatFloat(row.elapsed.Seconds(), 'f', 1, 64)})
	}
	return t
}

// classTable lists mean / p95 waits (minutes) and mean JCT (hours) by class.
func (r *replayReport) classTable() [][]string {
	head := []string{"policy"}
	for _, c := range queue.Classes {
		head = append(head, "wait "+c.Name+" mean / p95 min")
	}
	for _, c := range queue.Classes {
		head = append(head, "JCT "+c.Name+" h")
	}
	t := [][]string{head}
	for _, row := range r.rows {
		line := []string{row.s.Policy}
		for _, cs := range row.s.Classes {
			line = append(line, replayMinutes(cs.MeanWait)+" / "+replayMinutes(cs.P95Wait))
		}
		for _, cs := range row.s.Classes {
			line = append(line, replayHours(cs.MeanJCT))
		}
		t = append(t, line)
	}
	return t
}

// targets compares the engine (gangtopo) and the deployed path
// (gangtopo-slurm) with slurm, for those that ran.
func (r *replayReport) targets() [][]string {
	var ref *queue.Summary
	for i := range r.rows {
		if r.rows[i].s.Policy == replayReference {
			ref = &r.rows[i].s
		}
	}
	if ref == nil || r.info.History != "" {
		return nil // the targets are the Philly replay's
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	t := [][]string{{"target (against slurm)", "policy", "measured", "wanted", ""}}
	for i := range r.rows {
		g := &r.rows[i].s
		if g.Policy != "gangtopo" && g.Policy != replayDeployed {
			continue
		}
		one, oneRef := g.Classes[0].MeanWait, ref.Classes[0].MeanWait
		wait16, wait16Met := replayWaitRatio(g.Wait16, ref.Wait16)
		oneMet := "-" // no 1-GPU job: nothing to compare
		if !math.IsNaN(one) && !math.IsNaN(oneRef) {
			oneMet = met(one <= oneRef)
		}
		tight, tightMet := "no gang", "-"
		if g.Gangs > 0 {
			tight, tightMet = replayPct(g.Tight)+"%", met(g.Tight >= replayTargetTight)
		}
		t = append(t,
			[]string{"gangs in their tightest feasible domain", g.Policy, tight, ">= 95%", tightMet},
			[]string{"mean wait of 16+ GPU gangs", g.Policy, wait16, "<= 0.70x", wait16Met},
			[]string{"mean wait of 1-GPU jobs", g.Policy, replayMinutes(one) + " vs " + replayMinutes(oneRef) + " min", "<= slurm", oneMet})
		if g.Policy == replayDeployed {
			t = append(t, []string{"self-inflicted waits longer than one controller cycle", g.Policy, strconv.Itoa(g.SelfWaitsOverCycle), "0", met(g.SelfWaitsOverCycle == 0)})
		}
	}
	if len(t) == 1 {
		return nil
	}
	return t
}

// replayWaitRatio words the 16+ GPU wait target: our mean wait over
// slurm's and whether it is at most 0.7 of it. Without such gangs there is
// nothing to compare ("-"); when slurm's gangs did not wait, ours met the
// target only by not waiting either (a ratio over 0 is no number).
func replayWaitRatio(ours, ref float64) (string, string) {
	both := fmt.Sprintf("(%s vs %s min)", replayMinutes(ours), replayMinutes(ref))
	switch {
	case math.IsNaN(ours) || math.IsNaN(ref):
		return "no 16+ GPU gang", "-"
	case ref == 0 && ours == 0:
		return "no wait " + both, "met"
	case ref == 0:
		return "slurm's did not wait " + both, "MISSED"
	}
	ratio := ours / ref
	if ratio <= replayTargetWait16 {
		return fmt.Sprintf("%.2fx %s", ratio, both), "met"
	}
	return fmt.Sprintf("%.2fx %s", ratio, both), "MISSED"
}

func (rr *replayReports) writeTable(w io.Writer) {
	for _, h := range rr.central().header() {
		fmt.Fprintln(w, h)
	}
	for i, t := range rr.tables() {
		if t == nil {
			continue
		}
		fmt.Fprintln(w)
		if i == 1 {
			fmt.Fprintln(w, "by gang size (GPUs):")
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, line := range t {
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		tw.Flush()
	}
}

func (rr *replayReports) writeMarkdown(w io.Writer) {
	for _, h := range rr.central().header() {
		fmt.Fprintln(w, h+"  ")
	}
	for _, t := range rr.tables() {
		if t == nil {
			continue
		}
		fmt.Fprintln(w)
		writeMarkdownTable(w, t)
	}
}

// writeMarkdownTable writes t (header row first) as a Markdown table.
func writeMarkdownTable(w io.Writer, t [][]string) {
	for i, line := range t {
		fmt.Fprintln(w, "| "+strings.Join(line, " | ")+" |")
		if i == 0 {
			fmt.Fprintln(w, "|"+strings.Repeat("---|", len(line)))
		}
	}
}

// writeCSV writes one row per band and policy with every figure in base
// units (seconds, GPU-hours, fractions); a figure that does not exist (no
// job of a class) is empty.
func (rr *replayReports) writeCSV(w io.Writer) error {
	return writeCSVRows(w, append([][]string{replayCSVHeader()}, rr.csvRows()...))
}

// writeJSON writes the CSV's rows as objects (-o json).
func (rr *replayReports) writeJSON(w io.Writer) error {
	return writeRowsJSON(w, append([][]string{replayCSVHeader()}, rr.csvRows()...))
}

func writeCSVRows(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// csvRows are the rows of every band.
func (rr *replayReports) csvRows() (rows [][]string) {
	for _, r := range rr.reps {
		rows = append(rows, r.csvRows()...)
	}
	return rows
}

// bandName names the report's band in the CSV ("factors" for the fixed
// factors or none).
func (r *replayReport) bandName(sd replaySlowdown) string {
	if sd.bands == nil {
		return "factors"
	}
	return sd.bands[r.bandIx].String()
}

func replayCSVHeader() []string {
	head := []string{"cluster", "policy", "band", "jobs", "rejected", "compress", "peak_load", "offered_load", "util", "useful",
		"mean_wait_s", "wait16_s", "mean_jct_s", "tight", "gangs", "slowdown_gpu_hours", "stranded_gpu_hours", "mean_slowdown",
		"backfilled", "held_idle_gpu_hours", "peak_held_idle", "deadlocks", "timeouts", "rebinds", "self_wait_s",
		"self_waits_over_cycle", "run_s"}
	for _, c := range queue.Classes {
		head = append(head, "jobs_"+c.Name, "wait_mean_s_"+c.Name, "wait_p95_s_"+c.Name, "jct_mean_s_"+c.Name)
	}
	return append(head, "wait32_mean_s", "wait32_p95_s", "defrag_plans", "requeues", "requeues_per_job", "lost_gpu_hours", "lost_share")
}

func (r *replayReport) csvRows() [][]string {
	f := func(v float64) string {
		if math.IsNaN(v) {
			return "" // no figure (NaN is no number a spreadsheet reads)
		}
		return strconv.FormatFloat(v, 'g', 8, 64)
	}
	var rows [][]string
	for _, row := range r.rows {
		s := row.s
		line := []string{r.cluster.Name, s.Policy, r.bandLabel, strconv.Itoa(s.Jobs), strconv.Itoa(s.Rejected), f(r.run.compress),
			f(r.run.peak), f(r.run.offered), f(s.Util), f(s.Useful), f(s.MeanWait), f(s.Wait16), f(s.MeanJCT),
			f(s.Tight), strconv.Itoa(s.Gangs), f(s.SlowdownGPUHours), f(s.StrandedGPUHours), f(s.MeanSlowdown), f(s.Backfilled),
			f(s.HeldIdleGPUHours), strconv.Itoa(s.PeakHeldIdle), strconv.Itoa(s.Deadlocks), strconv.Itoa(s.Timeouts),
			strconv.Itoa(s.Rebinds), f(s.SelfWaitHours * 3600), strconv.Itoa(s.SelfWaitsOverCycle), f(row.elapsed.Seconds())}
		for _, cs := range s.Classes {
			line = append(line, strconv.Itoa(cs.Jobs), f(cs.MeanWait), f(cs.P95Wait), f(cs.MeanJCT))
		}
		line = append(line, f(s.Wait32), f(s.P95Wait32), strconv.Itoa(s.DefragPlans), strconv.Itoa(s.Requeues),
			f(s.RequeuesPerJob), f(s.LostGPUHours), f(s.LostShare))
		rows = append(rows, line)
	}
	return rows
}
