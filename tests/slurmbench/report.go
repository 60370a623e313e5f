package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// variant is one run of a reference sequence: recorded stock Slurm, stock
// Slurm replayed in this lab, or gangtopo.
type variant struct {
	label string
	rec   *runRec
	sum   summary
	csv   string
}

// replayAll replays each run with gangtopo (and the stock ones again
// without it, to check the lab against the recording) and writes the
// comparison into doc, the step-by-step CSVs next to it. Each Slurm
// series has a section and a CSV directory of its own (seriesSection):
// a run on sid's 26.05 does not replace the host's 22.05 figures.
func (b *bench) replayAll(ref refDirs, runs, stock []string, doc string) error {
	var body strings.Builder
	t0 := time.Now()
	rel := b.lab.Release
	dataDir := b.stepsDir(doc)
	recLabel := fmt.Sprintf("stock Slurm %s (recorded)", recordedRelease(ref.recorded))
	for _, run := range runs {
		recorded, err := readRecorded(ref.recorded, run)
		if err != nil {
			return err
		}
		vs := []variant{{label: recLabel, rec: recorded}}
		if contains(stock, run) {
			fmt.Printf("== %s, stock Slurm %s in this lab\n", run, rel)
			r, err := b.replay(ref.seqs, run, false)
			if err != nil {
				return err
			}
			vs = append(vs, variant{label: "stock Slurm (this lab)", rec: r})
		}
		fmt.Printf("== %s, gangtopo on Slurm %s\n", run, rel)
		r, err := b.replay(ref.seqs, run, true)
		if err != nil {
			return err
		}
		vs = append(vs, variant{label: "gangtopo", rec: r})
		for i := range vs {
			vs[i].sum = summarize(vs[i].rec)
			if vs[i].csv, err = writeSteps(dataDir, vs[i].rec, strings.Fields(vs[i].label)[0]+suffix(vs[i].label)); err != nil {
				return err
			}
		}
		body.WriteString(runReport(run, vs, doc))
	}
	rel2, _ := filepath.Rel(filepath.Dir(doc), dataDir)
	head := fmt.Sprintf("## Slurm plugin: the stock-Slurm reference sequences replayed on Slurm %s\n\n"+
		"Measured %s with `%s` (`slurmbench replay`, %v) on Slurm %s (%s): the Reference 1 sequences of "+
		"`../shared/data/slurm-22.05-reference` (fill to 90%%, cancel every third job, refill until a job pends; "+
		"README there) driven the same way through the 16-node lab with the gangtopo plugins (`jobs: gpu`, no "+
		"`--gang-topology` on any job: the default `any:preferred` applies), against the recorded stock runs (`%s`). "+
		"\"stock Slurm (this lab)\" replays the same sequence without the plugins, to show the lab behaves as the "+
		"recording. Step-by-step CSVs: `%s/`.\n\n", rel, time.Now().Format("2006-01-02"), b.makeCommand("bench-slurm-replay"),
		time.Since(t0).Round(time.Second), rel, b.where(), ref.recorded, filepath.ToSlash(rel2))
	return writeSection(doc, b.seriesSection("slurm-replay"), head+body.String())
}

// recordedRelease names the release of a recording directory: the
// reference's 22.05.8, or the release a slurm-<release> directory
// (record.go) names.
func recordedRelease(dir string) string {
	if r, ok := strings.CutPrefix(filepath.Base(filepath.Clean(dir)), "slurm-"); ok && strings.Count(r, ".") == 2 {
		return r
	}
	return referenceRelease
}

// referenceRelease is the release ../shared/data/slurm-22.05-reference
// was recorded on (its README, "Setup").
const referenceRelease = "22.05.8"

func suffix(label string) string {
	if strings.Contains(label, "recorded") {
		return "-recorded"
	}
	if strings.Contains(label, "this lab") {
		return "-lab"
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

var runTitles = map[string]string{
	"plain":        "`--gpus=G` jobs, cancel positions 1,4,7,…",
	"pernode":      "`-N G/8 --gpus-per-node=8` for 8+ GPUs, cancel positions 1,4,7,…",
	"plain_off2":   "`--gpus=G` jobs, cancel positions 3,6,9,… (13 single GPUs freed)",
	"pernode_off2": "`-N/--gpus-per-node` jobs, cancel positions 3,6,9,…",
}

func runReport(run string, vs []variant, doc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s: %s\n\n|", run, runTitles[run])
	for _, v := range vs {
		fmt.Fprintf(&b, " | %s", v.label)
	}
	b.WriteString(" |\n|---")
	for range vs {
		b.WriteString("|---")
	}
	b.WriteString("|\n")
	row := func(name string, f func(s summary) string) {
		fmt.Fprintf(&b, "| %s", name)
		for _, v := range vs {
			fmt.Fprintf(&b, " | %s", f(v.sum))
		}
		b.WriteString(" |\n")
	}
	row("phase A: jobs running / GPUs allocated / whole free nodes", func(s summary) string {
		return fmt.Sprintf("%d / %d / %d", s.jobsA, s.gpusA, s.wholeA)
	})
	row("after phase B: free GPUs / whole free nodes", func(s summary) string { return fmt.Sprintf("%d / %d", s.freeB, s.wholeB) })
	row("phase C: jobs placed before the first pends", func(s summary) string { return fmt.Sprint(s.placedC) })
	row("first job that pends: step, GPUs, reason", func(s summary) string {
		if s.pendStep == 0 {
			return "none"
		}
		return fmt.Sprintf("step %d, %d GPUs, %s", s.pendStep, s.pendGPUs, s.pendReason)
	})
	row("… free GPUs / whole free nodes then", func(s summary) string { return fmt.Sprintf("%d / %d", s.pendFree, s.pendWhole) })
	row("first phase-C step with no whole free node", func(s summary) string {
		if s.noWholeStep == 0 {
			return "never"
		}
		return fmt.Sprintf("step %d", s.noWholeStep)
	})
	row("16/32-GPU jobs: placed / over >1 leaf / over >1 leaf while one leaf had the whole nodes", func(s summary) string {
		return fmt.Sprintf("%d / %d / %d", s.gangs, s.spanning, s.needless)
	})
	row("small jobs that broke a whole free node while a partly used node fit them: anywhere / in its leaf", func(s summary) string {
		return fmt.Sprintf("%d / %d", s.broke, s.brokeLeaf)
	})
	if len(vs) > 2 && strings.Contains(vs[1].label, "this lab") {
		same, total := samePlacements(vs[0].rec, vs[1].rec)
		fmt.Fprintf(&b, "\nStock Slurm in this lab placed %d of %d submissions exactly as recorded (nodes and GPU indices, "+
			"step by step until the runs diverge).\n", same, total)
	}
	b.WriteString("\nWhole free nodes after each step (step-by-step files:")
	for _, v := range vs {
		rel, _ := filepath.Rel(filepath.Dir(doc), v.csv)
		fmt.Fprintf(&b, " [%s](%s)", v.label, rel)
	}
	b.WriteString("):\n\n```\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "%-32s %s\n", v.label, series(v.rec))
	}
	b.WriteString("```\n\n")
	return b.String()
}

// series renders whole free nodes after each step, phases separated by
// '|', a gang over several leaves marked '*' and the first pend '!'.
func series(r *runRec) string {
	var b strings.Builder
	phase := ""
	for i, st := range r.steps {
		if st.phase != phase {
			if phase != "" {
				b.WriteString(" |")
			}
			phase = st.phase
			b.WriteString(" " + phase + ":")
		}
		mark := ""
		leaves := map[int]bool{}
		for n := range st.alloc {
			leaves[leafOf(n)] = true
		}
		if st.action == "submit" && st.gpus >= 16 && len(leaves) > 1 {
			mark = "*"
		}
		if st.action == "submit" && st.state != "RUNNING" {
			mark = "!"
		}
		fmt.Fprintf(&b, " %d%s", wholeNodes(r.free[i+1]), mark)
	}
	return strings.TrimSpace(b.String())
}
