package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/sim/stepcost"
)

// The load a cluster sustains (--sustain).
//
// A policy sustains a peak load when, with the trace compressed so that
// its busiest week arrives at that load, the mean wait of every job it
// runs stays within 60 minutes and the mean wait of 16+ GPU gangs within
// 4 hours. The sustainable load is the highest such load, found per
// policy and band by a search over the load factor:
//
//  1. bracket: replay at --sustain-from; while it sustains, multiply the
//     load by 1.25 until it does not (at most 16x the start); while it
//     does not, divide by 1.25 until it does (at most down to 1/16 of it);
//     a search that hits either end reports the load as a bound (">= x",
//     "< x");
//  2. bisect between the highest load that sustained and the lowest that
//     did not until they are within --sustain-tolerance.
//
// The search assumes waits grow with load (one crossing); every load it
// tried is reported with its verdict, so a second crossing inside the
// bracket would show as a pass above a fail. Each load is a whole replay;
// the (policy, band) searches run side by side, one per CPU.

// Criteria of the sustainable load (issue 23).
const (
	sustainMeanWait   = 60 * 60     // seconds: mean wait of all jobs run
	sustainWait16     = 4 * 60 * 60 // seconds: mean wait of 16+ GPU gangs
	sustainStep       = 1.25
	sustainMaxUp      = 16.0
	sustainMaxDown    = 16.0
	sustainTargetStat = 2.0  // gangtopo's sustainable load against static partitions
	sustainTargetHard = 1.25 // and against stock Slurm with hard limits
)

// sustainTry is one replay of a search.
type sustainTry struct {
	load float64
	ok   bool
	s    queue.Summary
}

// sustainSearch is one (policy, band) search.
type sustainSearch struct {
	policy string
	band   int
	tries  []sustainTry
	best   *sustainTry // the highest load that sustained; nil: none
	err    error
}

// sustains says whether a replay's summary meets the criteria.
func sustains(s *queue.Summary) bool {
	return s.MeanWait <= sustainMeanWait && (math.IsNaN(s.Wait16) || s.Wait16 <= sustainWait16)
}

// try replays the search's policy at load.
func (ss *sustainSearch) try(set *replaySetup, load float64) (bool, error) {
	jobs := queue.Compress(set.traceJobs, 0, load/set.tracePeak)
	res, err := replayPolicy(ss.policy, set, jobs, set.slowdown.config(set.cfg, ss.band))
	if err != nil {
		return false, err
	}
	t := sustainTry{load: load, s: queue.Summarize(res)}
	t.ok = sustains(&t.s)
	ss.tries = append(ss.tries, t)
	return t.ok, nil
}

// run is the search: bracket, then bisect.
func (ss *sustainSearch) run(set *replaySetup, from, tol float64) {
	lo, hi := math.NaN(), math.NaN()
	for load := from; ; {
		ok, err := ss.try(set, load)
		if err != nil {
			ss.err = err
			return
		}
		if ok {
			lo = load
		} else {
			hi = load
		}
		switch {
		case !math.IsNaN(lo) && !math.IsNaN(hi):
		case ok && load*sustainStep <= from*sustainMaxUp:
			load *= sustainStep
			continue
		case !ok && load/sustainStep >= from/sustainMaxDown:
			load /= sustainStep
			continue
		}
		break
	}
	for !math.IsNaN(lo) && !math.IsNaN(hi) && hi-lo > tol {
		mid := (lo + hi) / 2
		ok, err := ss.try(set, mid)
		if err != nil {
			ss.err = err
			return
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	ss.settle()
}

// settle picks the highest load that sustained.
func (ss *sustainSearch) settle() {
	for i := range ss.tries {
		if t := &ss.tries[i]; t.ok && (ss.best == nil || t.load > ss.best.load) {
			ss.best = t
		}
	}
}

// runSustain runs the searches and writes the report.
func runSustain(set *replaySetup, w io.Writer, o *replayOptions) error {
	searches, err := sustainSearches(set, o.sustainFrom, o.sustainTol)
	if err != nil {
		return err
	}
	rep := &sustainReport{set: set, searches: searches}
	switch o.output {
	case "csv":
		return rep.writeCSV(w)
	case "markdown":
		rep.write(w, true)
	default:
		rep.write(w, false)
	}
	return nil
}

// sustainSearches runs every (policy, band) search from load from to
// within tol, one goroutine each, at most GOMAXPROCS at a time; band-major,
// policies in order.
func sustainSearches(set *replaySetup, from, tol float64) ([]*sustainSearch, error) {
	var searches []*sustainSearch
	for b := 0; b < set.slowdown.count(); b++ {
		for _, p := range set.policies {
			searches = append(searches, &sustainSearch{policy: p, band: b})
		}
	}
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for _, ss := range searches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ss.run(set, from, tol)
		}()
	}
	wg.Wait()
	for _, ss := range searches {
		if ss.err != nil {
			return nil, ss.err
		}
	}
	return searches, nil
}

// sustainReport formats the searches.
type sustainReport struct {
	set      *replaySetup
	searches []*sustainSearch // band-major, policies in order
}

// search is the search of policy p (index) at band b.
func (r *sustainReport) search(b, p int) *sustainSearch {
	return r.searches[b*len(r.set.policies)+p]
}

// load is policy p's sustainable load at band b (NaN: none found).
func (r *sustainReport) load(b, p int) float64 {
	if best := r.search(b, p).best; best != nil {
		return best.load
	}
	return math.NaN()
}

func fmtLoad(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// bound is the search's result as text: the load, ">= load" when no load
// tried failed, "< lowest tried" when none sustained.
func (ss *sustainSearch) bound() string {
	if ss.best == nil {
		lowest := math.Inf(1)
		for _, t := range ss.tries {
			lowest = min(lowest, t.load)
		}
		return "< " + fmtLoad(lowest)
	}
	for _, t := range ss.tries {
		if !t.ok {
			return fmtLoad(ss.best.load)
		}
	}
	return ">= " + fmtLoad(ss.best.load)
}

// table is the sustainable load per policy, and the figures at it.
func (r *sustainReport) table(b int) [][]string {
	t := [][]string{{"policy", "sustainable peak load", "mean wait min", "16+ wait min", "GPU util %", "stranded GPU-h",
		"slowdown GPU-h", "rejected", "replays"}}
	for p, name := range r.set.policies {
		ss := r.search(b, p)
		row := []string{name, ss.bound(), "-", "-", "-", "-", "-", "-", strconv.Itoa(len(ss.tries))}
		if best := ss.best; best != nil {
			s := &best.s
			row = []string{name, ss.bound(), replayMinutes(s.MeanWait), replayMinutes(s.Wait16), replayPct(s.Util),
				replayNum(s.StrandedGPUHours), replayNum(s.SlowdownGPUHours), strconv.Itoa(s.Rejected), strconv.Itoa(len(ss.tries))}
		}
		t = append(t, row)
	}
	return t
}

// ratios compares every policy's sustainable load with static partitions
// and with stock Slurm under hard limits, where those ran.
func (r *sustainReport) ratios(b int) [][]string {
	stat, hard := r.index(staticPolicy), r.index("slurm+hard")
	if stat < 0 && hard < 0 {
		return nil
	}
	t := [][]string{{"policy", "vs static", "vs slurm+hard"}}
	ratio := func(p, ref int) string {
		if ref < 0 {
			return "-"
		}
		x := r.load(b, p) / r.load(b, ref)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "-"
		}
		return fmt.Sprintf("%.2fx", x)
	}
	for p, name := range r.set.policies {
		t = append(t, []string{name, ratio(p, stat), ratio(p, hard)})
	}
	return t
}

// index is a policy's position, -1 when it did not run.
func (r *sustainReport) index(name string) int {
	for i, p := range r.set.policies {
		if p == name {
			return i
		}
	}
	return -1
}

// targets checks the targets for gangtopo's deployed path with
// quotas (and defragmentation): at least 2x static partitions and 1.25x
// stock Slurm with hard limits at the central band, never below stock
// Slurm at the low end of the band.
func (r *sustainReport) targets() [][]string {
	stat, hard := r.index(staticPolicy), r.index("slurm+hard")
	c, low := r.set.slowdown.central(), r.lowBand()
	t := [][]string{{"target", "policy", "measured", "wanted", ""}}
	row := func(what, name string, b, p, ref int, want float64) []string {
		x := r.load(b, p) / r.load(b, ref)
		verdict := "MISSED"
		switch {
		case r.bounded(b, p) || r.bounded(b, ref):
			verdict = "unknown: a search reached its limit"
		case x >= want:
			verdict = "met"
		}
		return []string{what, name, fmt.Sprintf("%.2fx", x), fmt.Sprintf(">= %gx", want), verdict}
	}
	for p, name := range r.set.policies {
		if !strings.HasPrefix(name, replayDeployed+"+quota") {
			continue
		}
		if stat >= 0 {
			t = append(t, row("sustainable load against static partitions, "+r.bandName(c)+" band", name, c, p, stat, sustainTargetStat))
		}
		if hard >= 0 {
			t = append(t, row("sustainable load against stock Slurm with hard limits, "+r.bandName(c)+" band", name, c, p, hard, sustainTargetHard))
			if low >= 0 {
				t = append(t, row("sustainable load against stock Slurm with hard limits, low band", name, low, p, hard, 1))
			}
		}
	}
	if len(t) == 1 {
		return nil
	}
	return t
}

// lowBand is the index of the low band, -1 when the replay has none.
func (r *sustainReport) lowBand() int {
	for i, b := range r.set.slowdown.bands {
		if b == stepcost.Low {
			return i
		}
	}
	return -1
}

// bounded says the search of policy p at band b found only a bound.
func (r *sustainReport) bounded(b, p int) bool {
	return strings.ContainsAny(r.search(b, p).bound(), "<>")
}

// tried lists every load each search replayed, + sustained, - not.
func (r *sustainReport) tried() [][]string {
	t := [][]string{{"policy", "band", "loads replayed (+ sustained, - did not)"}}
	for _, ss := range r.searches {
		var parts []string
		for _, tr := range ss.tries {
			mark := "-"
			if tr.ok {
				mark = "+"
			}
			parts = append(parts, fmtLoad(tr.load)+mark)
		}
		t = append(t, []string{ss.policy, r.bandName(ss.band), strings.Join(parts, " ")})
	}
	return t
}

func (r *sustainReport) bandName(b int) string {
	if r.set.slowdown.bands == nil {
		return "factors"
	}
	return r.set.slowdown.bands[b].String()
}

// merged is a per-band table merged over the bands.
func (r *sustainReport) merged(f func(b int) [][]string) [][]string {
	tables := make([][][]string, r.set.slowdown.count())
	for b := range tables {
		tables[b] = f(b)
	}
	return mergeBands(tables, r.set.slowdown.central())
}

func (r *sustainReport) write(w io.Writer, markdown bool) {
	h := replayHeader(r.set.info, r.set.cluster)
	h = append(h[:2:2], append([]string{"sustainable load: the highest peak load (the busiest week's work over the cluster's capacity) at which the mean wait stays within 60 min and the mean wait of 16+ GPU gangs within 4 h; " +
		fmt.Sprintf("searched from %g by steps of x%g, then bisection to within %g", r.searchFrom(), sustainStep, r.searchTol())}, h[2:]...)...)
	for _, line := range h {
		if markdown {
			line += "  "
		}
		fmt.Fprintln(w, line)
	}
	for _, t := range [][][]string{r.merged(r.table), r.merged(r.ratios), r.targets(), r.tried()} {
		if t == nil {
			continue
		}
		fmt.Fprintln(w)
		if markdown {
			writeMarkdownTable(w, t)
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, line := range t {
			fmt.Fprintln(tw, strings.Join(line, "\t"))
		}
		tw.Flush()
	}
}

func (r *sustainReport) searchFrom() float64 { return r.set.sustainFrom }
func (r *sustainReport) searchTol() float64  { return r.set.sustainTol }

// writeCSV writes every replay of every search, in base units.
func (r *sustainReport) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	if err := cw.Write([]string{"cluster", "policy", "band", "peak_load", "sustained", "sustainable_load", "mean_wait_s", "wait16_s",
		"util", "stranded_gpu_hours", "slowdown_gpu_hours", "rejected"}); err != nil {
		return err
	}
	for _, ss := range r.searches {
		best := math.NaN()
		if ss.best != nil {
			best = ss.best.load
		}
		for _, t := range ss.tries {
			if err := cw.Write([]string{r.set.cluster.Name, ss.policy, r.bandName(ss.band), f(t.load), strconv.FormatBool(t.ok), f(best),
				f(t.s.MeanWait), f(t.s.Wait16), f(t.s.Util), f(t.s.StrandedGPUHours), f(t.s.SlowdownGPUHours), strconv.Itoa(t.s.Rejected)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
