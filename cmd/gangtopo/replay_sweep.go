package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// replaySweep compares the policies across loads: one compact row per
// (load, policy), so the curve of waits against load can be read down a
// column.
type replaySweep struct {
	set *replaySetup
}

func (sw *replaySweep) table() [][]string {
	t := [][]string{{"peak load", "compress", "policy", "GPU util %", "mean wait min", "1-GPU wait min", "16+ wait min",
		"16+ vs slurm", "tightest %", "slowdown GPU-h", "held idle GPU-h", "timeouts"}}
	for _, run := range sw.set.runs {
		rep := newReplayReport(sw.set, run)
		ref := -1.0
		for _, row := range rep.rows {
			if row.s.Policy == replayReference {
				ref = row.s.Wait16
			}
		}
		for _, row := range rep.rows {
			s := row.s
			ratio := "-"
			if ref > 0 {
				ratio = fmt.Sprintf("%.2fx", s.Wait16/ref)
			}
			t = append(t, []string{fmt.Sprintf("%.3g", run.peak), fmt.Sprintf("%.3g", run.compress), s.Policy,
				replayPct(s.Util), replayMinutes(s.MeanWait), replayMinutes(s.Classes[0].MeanWait), replayMinutes(s.Wait16), ratio,
				replayPct(s.Tight), replayNum(s.SlowdownGPUHours), replayNum(s.HeldIdleGPUHours), strconv.Itoa(s.Timeouts)})
		}
	}
	return t
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
	for i, line := range sw.table() {
		fmt.Fprintln(w, "| "+strings.Join(line, " | ")+" |")
		if i == 0 {
			fmt.Fprintln(w, "|"+strings.Repeat("---|", len(line)))
		}
	}
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
		rows = append(rows, newReplayReport(sw.set, run).csvRows()...)
	}
	return rows
}
