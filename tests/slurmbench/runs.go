package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// One throughput run moves by up to 0.1 on a shared machine with the
// plugin unchanged, so every run is kept: `slurmbench throughput` appends
// its run to runsFile (beside the document, under bench/) and rewrites two
// sections from the whole file: "slurm-throughput", the latest run on each
// Slurm release (the host's 22.05 and the newer series of the Debian
// roots side by side, one row each), and "slurm-throughput-runs", every
// run grouped by release and -label. Nothing in either table is typed: to
// compare two designs, run each with its own label.
const runsFile = "slurm-throughput-runs.csv"

var runsHeader = []string{"date", "slurm", "label", "ctld_env", "jobs", "wall_stock_s", "wall_with_s", "ratio",
	"ctld_ms_stock", "ctld_ms_with", "machine_ms_stock", "machine_ms_with", "calls", "took_p50_us", "took_p99_us",
	"took_max_us", "engine_p50_us", "engine_p99_us", "load1"}

// runRecord is one row of runsFile.
type runRecord struct {
	Date, Slurm, Label, CtldEnv   string // Slurm: the release the lab ran, "26.05.5"
	Jobs                          int    // per mode
	WallStockS, WallWithS         float64
	Ratio                         float64 // throughput with / without
	CtldStockMs, CtldWithMs       float64 // slurmctld CPU per submission
	MachineStockMs, MachineWithMs float64 // the whole machine's
	Calls                         int     // the plugin's logged calls
	TookP50, TookP99, TookMax     float64 // the plugin's logged time per call, µs
	EngineP50, EngineP99          float64 // the engine's share of it, µs
	Load                          float64 // 1-minute load average at the end
}

func (r runRecord) row() []string {
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return []string{r.Date, r.Slurm, r.Label, r.CtldEnv, strconv.Itoa(r.Jobs), f(r.WallStockS, 2), f(r.WallWithS, 2), f(r.Ratio, 3),
		f(r.CtldStockMs, 2), f(r.CtldWithMs, 2), f(r.MachineStockMs, 2), f(r.MachineWithMs, 2), strconv.Itoa(r.Calls),
		f(r.TookP50, 0), f(r.TookP99, 0), f(r.TookMax, 0), f(r.EngineP50, 0), f(r.EngineP99, 0), f(r.Load, 2)}
}

// runsPath is runsFile for the document at doc: docs/bench/ for
// docs/benchmarks.md.
func runsPath(doc string) string { return filepath.Join(filepath.Dir(doc), "bench", runsFile) }

// appendRun adds one run to the file, writing the header into a new file.
func appendRun(path string, r runRecord) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		_ = w.Write(runsHeader)
	}
	_ = w.Write(r.row())
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRuns reads the file's rows.
func readRuns(r io.Reader) ([]runRecord, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(runsHeader, ",") {
		return nil, errors.New("want the header " + strings.Join(runsHeader, ","))
	}
	var out []runRecord
	for i, row := range rows[1:] {
		var nums [15]float64 // the columns from jobs on
		for k := range nums {
			if nums[k], err = strconv.ParseFloat(row[4+k], 64); err != nil {
				return nil, fmt.Errorf("row %d: %s: %w", i+2, runsHeader[4+k], err)
			}
		}
		out = append(out, runRecord{Date: row[0], Slurm: row[1], Label: row[2], CtldEnv: row[3], Jobs: int(nums[0]),
			WallStockS: nums[1], WallWithS: nums[2], Ratio: nums[3], CtldStockMs: nums[4], CtldWithMs: nums[5],
			MachineStockMs: nums[6], MachineWithMs: nums[7], Calls: int(nums[8]), TookP50: nums[9], TookP99: nums[10],
			TookMax: nums[11], EngineP50: nums[12], EngineP99: nums[13], Load: nums[14]})
	}
	return out, nil
}

// runsReport is the every-run section: one line per release and label,
// in order of first run.
func runsReport(path string, runs []runRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Throughput: every run\n\n")
	fmt.Fprintf(&b, "Every `slurmbench throughput` run (`make bench-slurm-throughput [SLURM_SERIES=...]`; `-label` names the design measured) "+
		"appends itself to `%s` and rewrites this table from it, one line per Slurm release and label. One run's ratio moves by up to 0.1 on a shared 2-core "+
		"machine with the plugin unchanged: compare the spread of runs of one day, not single runs. Extra = slurmctld CPU "+
		"per submission with the plugin minus without.\n\n", filepath.ToSlash(filepath.Join("bench", filepath.Base(path))))
	if len(runs) == 0 {
		fmt.Fprintf(&b, "No run recorded yet.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "| Slurm | label | days | runs | ratio: min / median / max | met (>= 0.9) | extra ms: min / median / max |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|\n")
	type key struct{ slurm, label string }
	var order []key
	groups := map[key][]runRecord{}
	for _, r := range runs {
		k := key{r.Slurm, r.Label}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		rs := groups[k]
		var ratios, extra []float64
		days, met := map[string]bool{}, 0
		for _, r := range rs {
			ratios, extra = append(ratios, r.Ratio), append(extra, r.CtldWithMs-r.CtldStockMs)
			days[r.Date] = true
			if r.Ratio >= minRatio {
				met++
			}
		}
		var ds []string
		for d := range days {
			ds = append(ds, d)
		}
		sort.Strings(ds)
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %d of %d | %s |\n", k.slurm, k.label, strings.Join(ds, ", "), len(rs),
			spread(ratios, 3), met, len(rs), spread(extra, 2))
	}
	return b.String()
}

// minRatio is the throughput target: with the plugins at least 90% of
// stock Slurm's submission rate.
const minRatio = 0.9

// spread writes min / median / max.
func spread(xs []float64, prec int) string {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return f(s[0]) + " / " + f(med) + " / " + f(s[len(s)-1])
}

// recordRun appends the run and rewrites the sections from every run.
func recordRun(doc string, r runRecord) error {
	if err := appendRun(runsPath(doc), r); err != nil {
		return err
	}
	return renderRuns(doc)
}

// renderRuns rewrites both sections from the runs file (none yet: they
// say so).
func renderRuns(doc string) error {
	path := runsPath(doc)
	var runs []runRecord
	f, err := os.Open(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return err
	default:
		defer f.Close()
		if runs, err = readRuns(f); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := writeSection(doc, "slurm-throughput", latestReport(path, runs)); err != nil {
		return err
	}
	return writeSection(doc, "slurm-throughput-runs", runsReport(path, runs))
}
