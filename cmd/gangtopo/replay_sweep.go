package main

import (
	"encoding/csv"
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
			if ref > 0 {
				ratio = fmt.Sprintf("%.2fx", s.Wait16/ref)
			}
			t = append(t, []string{fmt.Sprintf("%.3g", run.peak), fmt.Sprintf("%.3g", run.compress), s.Policy,
				replayPct(s.Util), replayMinutes(s.MeanWait), replayMinutes(s.Classes[0].MeanWait), replayMinutes(s.Wait16), ratio,
				replayPct(s.Tight), replayNum(s.SlowdownGPUHours), replayNum(s.StrandedGPUHours), replayNum(s.HeldIdleGPUHours), strconv.Itoa(s.Timeouts)})
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
	writeMarkdownTable(w, sw.table())
}

// writeCSV writes the full figures of every (load, policy) pair.
func (sw *replaySweep) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(replayCSVHeader()); err != nil {
		return err
	}
	for _, run := range sw.set.runs {
		if err := newReplayReports(sw.set, run).csvRows(cw); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
