package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/picture"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
)

// replaySweep compares the policies across loads: one compact row per
// (load, policy), so the curve of waits against load can be read down a
// column.
type replaySweep struct {
	set *replaySetup
}

func (sw *replaySweep) table() [][]string {
	t := [][]string{{"peak load", "compress", "policy", "GPU util %", "mean wait min", "1-GPU wait min", "16+ wait min",
		"16+ vs slurm", "tightest %", "slowdown GPU-h", "stranded GPU-h", "held idle GPU-h", "timeouts"}}
	for _, run := range sw.set.runs {
		t = append(t, newReplayReports(sw.set, run).table(sweepRows)[1:]...)
	}
	return t
}

// sweepRows are one run's rows of the sweep table at one band, under a
// header row.
func sweepRows(rep *replayReport) [][]string {
	t := [][]string{nil}
	run := rep.run
	{
		ref := -1.0
		for _, row := range rep.rows {
			if row.s.Policy == replayReference {
				ref = row.s.Wait16
			}
		}
		for _, row := range rep.rows {
			s := row.s
			ratio := "-"
			if ref > 0 && !math.IsNaN(s.Wait16) {
				ratio = fmt.Sprintf("%.2fx", s.Wait16/ref)
			}
			t = append(t, []string{fmt.Sprintf("%.3g", run.peak), fmt.Sprintf("%.3g", run.compress), s.Policy,
				replayPct(s.Util), replayMinutes(s.MeanWait), replayMinutes(s.Classes[0].MeanWait), replayMinutes(s.Wait16), ratio,
				replayPct(s.Tight), replayNum(s.SlowdownGPUHours), replayNum(s.StrandedGPUHours), replayNum(s.HeldIdleGPUHours), strconv.Itoa(s.Timeouts)})
		}
	}
	return t
}

// writeSVG draws the sweep (replay --svg) at the central band: per policy, the mean wait of
// all jobs and of 16+ GPU gangs, and the GPU utilisation, against the
// peak load; what a load sweep is for, rather than its table.
func (sw *replaySweep) writeSVG(w io.Writer) error {
	charts := []picture.Chart{
		{Title: "mean wait, all jobs", YLabel: "minutes"},
		{Title: "mean wait of 16+ GPU gangs", YLabel: "minutes"},
		{Title: "GPU utilisation", YLabel: "% of the GPUs"},
	}
	figures := []func(queue.Summary) float64{
		func(s queue.Summary) float64 { return s.MeanWait / 60 },
		func(s queue.Summary) float64 { return s.Wait16 / 60 },
		func(s queue.Summary) float64 { return 100 * s.Util },
	}
	for ci := range charts {
		charts[ci].XLabel = "peak load, % of the GPUs"
		for pi, pol := range sw.set.policies {
			sr := picture.Series{Name: pol}
			for _, run := range sw.set.runs {
				sr.X = append(sr.X, 100*run.peak)
				sr.Y = append(sr.Y, figures[ci](queue.Summarize(run.bands[sw.set.slowdown.central()].results[pi])))
			}
			charts[ci].Series = append(charts[ci].Series, sr)
		}
	}
	title := fmt.Sprintf("replay of %s on %s: waits against load", sw.set.info.Trace, sw.set.cluster.Name)
	return picture.Panels(w, title, charts, 3)
}

func (sw *replaySweep) writeTable(w io.Writer) {
	for _, h := range replayHeader(sw.set.info, sw.set.cluster) {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, line := range sw.table() {
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	tw.Flush()
}

func (sw *replaySweep) writeMarkdown(w io.Writer) {
	for _, h := range replayHeader(sw.set.info, sw.set.cluster) {
		fmt.Fprintln(w, h+"  ")
	}
	fmt.Fprintln(w)
	writeMarkdownTable(w, sw.table())
}

// writeCSV writes the full figures of every (load, policy) pair.
func (sw *replaySweep) writeCSV(w io.Writer) error {
	return writeCSVRows(w, sw.rows())
}

// writeJSON writes the CSV's rows as objects (-o json).
func (sw *replaySweep) writeJSON(w io.Writer) error {
	return writeRowsJSON(w, sw.rows())
}

// rows is the CSV: its header, then every (load, policy) pair.
func (sw *replaySweep) rows() [][]string {
	rows := [][]string{replayCSVHeader()}
	for _, run := range sw.set.runs {
		rows = append(rows, newReplayReports(sw.set, run).csvRows()...)
	}
	return rows
}
