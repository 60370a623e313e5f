package main

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/picture"
	"github.com/gangtopo/gangtopo/selector/sim/queue"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The replay's page (replay --html FILE): one HTML file that holds
// everything it shows (inline CSS and SVG; no script, font or style sheet
// is fetched, so it opens offline and can be mailed), for people who look
// at a replay rather than read its tables. Four sections:
//   - waits against load, per size class, each policy's line at the
//     central band with the low..high band shaded around it (with one load
//     replayed there is no curve: a table of the waits by class instead);
//   - the slowdown band: GPU-hours lost to slowdown and useful
//     utilisation against load, and the headline figures of the last load
//     at every band;
//   - stranded GPU-hours over time, and
//   - the cluster's free whole nodes and leaves over time, both at the last
//     load replayed and the central band, binned from the first submit to
//     the last end (queue.StrandedSteps, queue.FreeWhole).
// The page has no clock, host or run time in it: the same replay writes
// the same bytes.

// htmlSection is one section of the page: a chart, a table or both.
type htmlSection struct {
	ID, Title, Note string
	SVG             template.HTML // written by picture, which escapes its text
	Table           [][]string    // header row first
}

type htmlPage struct {
	Title    string
	Header   []string
	Sections []htmlSection
}

// writeHTML writes the page of a replay (replay --html).
func (set *replaySetup) writeHTML(w io.Writer) error {
	run := set.runs[len(set.runs)-1]
	rr := newReplayReports(set, run)
	page := htmlPage{Title: fmt.Sprintf("gangtopo replay of %s on %s", set.info.Trace, set.cluster.Name), Header: rr.central().header()}
	if len(set.runs) > 1 {
		page.Header = replayHeader(set.info, set.cluster) // what every load shares
	}
	for _, f := range []func(*replaySetup, *replayReports) (htmlSection, error){htmlWaits, htmlBand, htmlStranded, htmlFree} {
		s, err := f(set, rr)
		if err != nil {
			return err
		}
		page.Sections = append(page.Sections, s)
	}
	return htmlTemplate.Execute(w, page)
}

// htmlAtLoad says which replay the over-time sections show.
func htmlAtLoad(set *replaySetup, run *replayRun) string {
	at := fmt.Sprintf("at a peak load of %.0f%%", 100*run.peak)
	if set.hist != nil {
		at = "the history at its own pace"
		if run.compress != 1 {
			at = fmt.Sprintf("the history compressed %.3gx", run.compress)
		}
	}
	if len(set.runs) > 1 {
		at += " (the last load replayed)"
	}
	if set.slowdown.bands != nil {
		at += ", central band"
	}
	return at
}

// htmlBandNote says what the shading is, when there is one.
func htmlBandNote(set *replaySetup) string {
	if set.slowdown.bands == nil {
		return ""
	}
	return " The shading around each line spans the slowdown model's low and high bands; the line is the central band."
}

// sweepChart draws figure against the peak load for every policy, with
// the band when the slowdown has one.
func sweepChart(set *replaySetup, title, ylabel string, figure func(queue.Summary) float64) picture.Chart {
	ch := picture.Chart{Title: title, XLabel: "peak load, % of the GPUs", YLabel: ylabel}
	central, last := set.slowdown.central(), set.slowdown.count()-1
	for pi, pol := range set.policies {
		sr := picture.Series{Name: pol}
		for _, run := range set.runs {
			at := func(b int) float64 { return figure(queue.Summarize(run.bands[b].results[pi])) }
			sr.X, sr.Y = append(sr.X, 100*run.peak), append(sr.Y, at(central))
			if last > 0 {
				sr.Lo, sr.Hi = append(sr.Lo, at(0)), append(sr.Hi, at(last))
			}
		}
		ch.Series = append(ch.Series, sr)
	}
	return ch
}

func panelsHTML(title string, charts []picture.Chart, cols int) (template.HTML, error) {
	var b bytes.Buffer
	if err := picture.Panels(&b, title, charts, cols); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil // picture escapes every text it draws
}

// htmlWaits is the waits of each size class (and of all jobs) against
// the load.
func htmlWaits(set *replaySetup, rr *replayReports) (htmlSection, error) {
	s := htmlSection{ID: "waits", Title: "Waits against load, by gang size"}
	if len(set.runs) == 1 {
		s.Note = "One load was replayed (" + htmlAtLoad(set, rr.reps[0].run) + "): give --peak-load several loads (e.g. 0.8,1,1.2) to draw the waits against it. Mean and 95th percentile waits by gang size (GPUs):"
		s.Table = rr.table((*replayReport).classTable)
		return s, nil
	}
	s.Note = "Mean wait of the jobs of each size class (GPUs), in minutes, against the peak load." + htmlBandNote(set)
	var charts []picture.Chart
	for ci, c := range queue.Classes {
		charts = append(charts, sweepChart(set, c.Name+" GPU jobs", "mean wait, minutes",
			func(s queue.Summary) float64 { return s.Classes[ci].MeanWait / 60 }))
	}
	charts = append(charts, sweepChart(set, "all jobs", "mean wait, minutes", func(s queue.Summary) float64 { return s.MeanWait / 60 }))
	var err error
	s.SVG, err = panelsHTML("mean wait against load", charts, 3)
	return s, err
}

// htmlBand is the slowdown model's band: what placement cost against the
// load, and the headline figures of the last load at every band.
func htmlBand(set *replaySetup, rr *replayReports) (htmlSection, error) {
	s := htmlSection{ID: "band", Title: "The slowdown band", Note: "The slowdown model: " + set.info.Slowdown + "."}
	if set.slowdown.bands != nil {
		s.Note += " Each figure below is the central band's, with [low..high] where the bands differ."
	} else {
		s.Note += " Fixed factors give one figure each, no band (the grounded model, the default, gives a low, central and high band)."
	}
	s.Table = rr.table(htmlBandRows)
	if len(set.runs) == 1 {
		return s, nil
	}
	charts := []picture.Chart{
		sweepChart(set, "GPU-hours lost to slowdown", "GPU-hours", func(s queue.Summary) float64 { return s.SlowdownGPUHours }),
		sweepChart(set, "useful utilisation", "% of the GPUs", func(s queue.Summary) float64 { return 100 * s.Useful }),
	}
	s.Note += htmlBandNote(set) + " The table is " + htmlAtLoad(set, rr.reps[0].run) + "."
	var err error
	s.SVG, err = panelsHTML("what placement cost, against load", charts, 3)
	return s, err
}

// htmlBandRows are a report's headline figures (no run time: the page is
// the same for the same replay).
func htmlBandRows(r *replayReport) [][]string {
	t := [][]string{{"policy", "GPU util %", "useful %", "mean wait min", "wait 16+ min", "tightest %", "slowdown GPU-h", "stranded GPU-h"}}
	for _, row := range r.rows {
		s := row.s
		t = append(t, []string{s.Policy, replayPct(s.Util), replayPct(s.Useful), replayMinutes(s.MeanWait), replayMinutes(s.Wait16),
			replayPct(s.Tight), replayNum(s.SlowdownGPUHours), replayNum(s.StrandedGPUHours)})
	}
	return t
}

// htmlBins are the time bins of the over-time charts: from the first
// submit to the last job's end under any policy, cut into at most
// htmlMaxBins bins of a round width.
type htmlBins struct {
	lo, hi, width float64
	n             int
	name          string  // "hour", ...: what a bin is
	unit          float64 // seconds of the x axis' unit
	unitName      string
}

const htmlMaxBins = 120

// htmlBinWidths are the bins' widths, the narrowest first.
var htmlBinWidths = []struct {
	s    float64
	name string
}{{10, "10 s"}, {30, "30 s"}, {60, "minute"}, {300, "5 min"}, {900, "15 min"}, {3600, "hour"}, {6 * 3600, "6 h"},
	{86400, "day"}, {7 * 86400, "week"}, {28 * 86400, "4 weeks"}}

func newHTMLBins(set *replaySetup, run *replayRun) htmlBins {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range run.jobs {
		lo, hi = min(lo, run.jobs[i].Submit), max(hi, run.jobs[i].Submit)
	}
	for _, res := range run.bands[set.slowdown.central()].results {
		for _, o := range res.Outcomes {
			if !math.IsNaN(o.End) {
				hi = max(hi, o.End)
			}
		}
	}
	span := max(hi-lo, 60)
	b := htmlBins{lo: lo, unit: 60, unitName: "minutes"}
	switch {
	case span > 4*86400:
		b.unit, b.unitName = 86400, "days"
	case span > 2*3600:
		b.unit, b.unitName = 3600, "hours"
	}
	for _, w := range htmlBinWidths {
		b.width, b.name = w.s, w.name
		if span/w.s <= htmlMaxBins {
			break
		}
	}
	b.n = int(math.Ceil(span/b.width - 1e-9))
	b.hi = lo + float64(b.n)*b.width
	return b
}

// x is each bin's middle, in the axis' unit from the first submit.
func (b htmlBins) x() []float64 {
	out := make([]float64, b.n)
	for i := range out {
		out[i] = (float64(i) + 0.5) * b.width / b.unit
	}
	return out
}

// overTime draws one chart over time: each policy's steps (of the
// central band's result), binned, times scale.
func overTime(set *replaySetup, run *replayRun, b htmlBins, title, ylabel string, steps func(*queue.Result) []queue.Step, scale float64) picture.Chart {
	ch := picture.Chart{Title: title, XLabel: b.unitName + " since the first submit", YLabel: ylabel}
	for pi, pol := range set.policies {
		st := steps(run.bands[set.slowdown.central()].results[pi])
		if st == nil {
			continue
		}
		y := queue.BinMeans(st, b.lo, b.hi, b.n)
		for i := range y {
			y[i] *= scale
		}
		ch.Series = append(ch.Series, picture.Series{Name: pol, X: b.x(), Y: y})
	}
	return ch
}

func htmlOverTimeNote(set *replaySetup, run *replayRun, b htmlBins) string {
	pace := ""
	if set.hist == nil {
		pace = fmt.Sprintf(" (submit times compressed %.3gx)", run.compress)
	}
	return fmt.Sprintf("From the first submit to the last job's end%s, %s, in bins of one %s.", pace, htmlAtLoad(set, run), b.name)
}

// htmlStranded is the stranded GPU-hours over time.
func htmlStranded(set *replaySetup, rr *replayReports) (htmlSection, error) {
	run := rr.reps[0].run
	b := newHTMLBins(set, run)
	ch := overTime(set, run, b, "stranded GPU-hours per "+b.name, "GPU-hours", queue.StrandedSteps, b.width/3600)
	s := htmlSection{ID: "stranded", Title: "Stranded GPU-hours over time",
		Note: htmlOverTimeNote(set, run, b) + " Stranded: GPUs idle while jobs that fit them by count waited (what placement, reservations, quotas or partitions left unused)."}
	var err error
	s.SVG, err = panelsHTML("stranded GPU-hours over time", []picture.Chart{ch}, 1)
	return s, err
}

// htmlFree is the cluster's free whole nodes and leaves over time.
func htmlFree(set *replaySetup, rr *replayReports) (htmlSection, error) {
	run := rr.reps[0].run
	b := newHTMLBins(set, run)
	nodes := func(r *queue.Result) []queue.Step { n, _ := queue.FreeWhole(r, set.cluster); return n }
	leaves := func(r *queue.Result) []queue.Step { _, l := queue.FreeWhole(r, set.cluster); return l }
	charts := []picture.Chart{overTime(set, run, b, "free whole nodes", "nodes, mean over a "+b.name, nodes, 1)}
	if lc := overTime(set, run, b, "free whole leaves", "leaves, mean over a "+b.name, leaves, 1); len(lc.Series) > 0 {
		charts = append(charts, lc)
	}
	s := htmlSection{ID: "free", Title: "Free whole nodes and leaves over time",
		Note: htmlOverTimeNote(set, run, b) + fmt.Sprintf(" A node is free when every GPU of it is; a leaf when every node under it is (%s: %d nodes, %d leaves). naive-pods' partial gangs count from their start only.",
			set.cluster.Name, len(set.cluster.Nodes), len(set.cluster.ByTier[topology.TierLeaf]))}
	var err error
	s.SVG, err = panelsHTML("what is left whole for big gangs", charts, 2)
	return s, err
}

var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 64em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
p.setup { margin: 0.2em 0; color: #555; font-size: 0.9em; }
figure { margin: 0.8em 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.8em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
footer { margin-top: 2em; color: #777; font-size: 0.85em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Header}}<p class="setup">{{.}}</p>
{{end}}{{range .Sections}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p>{{.Note}}</p>
{{if .SVG}}<figure class="chart">
{{.SVG}}</figure>
{{end}}{{with .Table}}<table>
{{range $i, $row := .}}<tr>{{range $row}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>
{{end}}</table>
{{end}}</section>
{{end}}<footer>Written by gangtopo replay --html; how to read it: docs/replay.md.</footer>
</body>
</html>
`))
