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
// its run to runsFile (beside the document, under bench/) and rewrites the
// "slurm-throughput-runs" section from the whole file, grouped by -label.
// Nothing in that table is typed: to compare two designs, run each with its
// own label.
const runsFile = "slurm-throughput-runs.csv"

var runsHeader = []string{"date", "label", "ctld_env", "jobs", "ratio", "ctld_ms_stock", "ctld_ms_with",
	"machine_ms_stock", "machine_ms_with", "took_p50_us", "took_p99_us"}

// runRecord is one row of runsFile.
type runRecord struct {
	Date, Label, CtldEnv          string
	Jobs                          int
	Ratio                         float64
	CtldStockMs, CtldWithMs       float64 // slurmctld CPU per submission
	MachineStockMs, MachineWithMs float64 // the whole machine's
	TookP50, TookP99              float64 // the plugin's logged time per call, µs
}

func (r runRecord) row() []string {
	f := func(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }
	return []string{r.Date, r.Label, r.CtldEnv, strconv.Itoa(r.Jobs), f(r.Ratio, 3), f(r.CtldStockMs, 2), f(r.CtldWithMs, 2),
		f(r.MachineStockMs, 2), f(r.MachineWithMs, 2), f(r.TookP50, 0), f(r.TookP99, 0)}
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
		var nums [8]float64
		for k := range nums {
			if nums[k], err = strconv.ParseFloat(row[3+k], 64); err != nil {
				return nil, fmt.Errorf("row %d: %s: %w", i+2, runsHeader[3+k], err)
			}
		}
		out = append(out, runRecord{Date: row[0], Label: row[1], CtldEnv: row[2], Jobs: int(nums[0]), Ratio: nums[1],
			CtldStockMs: nums[2], CtldWithMs: nums[3], MachineStockMs: nums[4], MachineWithMs: nums[5], TookP50: nums[6], TookP99: nums[7]})
	}
	return out, nil
}

// runsReport is the section: one line per label, in order of first run.
func runsReport(path string, runs []runRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Throughput: every run\n\n")
	fmt.Fprintf(&b, "Every `slurmbench throughput` run (`make bench-slurm-throughput`; `-label` names the design measured) "+
		"appends itself to `%s` and rewrites this table from it. One run's ratio moves by up to 0.1 on a shared 2-core "+
		"machine with the plugin unchanged: compare the spread of runs of one day, not single runs. Extra = slurmctld CPU "+
		"per submission with the plugin minus without.\n\n", filepath.ToSlash(filepath.Join("bench", filepath.Base(path))))
	if len(runs) == 0 {
		fmt.Fprintf(&b, "No run recorded yet.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "| label | days | runs | ratio: min / median / max | met (>= 0.9) | extra ms: min / median / max |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|\n")
	var order []string
	byLabel := map[string][]runRecord{}
	for _, r := range runs {
		if _, ok := byLabel[r.Label]; !ok {
			order = append(order, r.Label)
		}
		byLabel[r.Label] = append(byLabel[r.Label], r)
	}
	for _, label := range order {
		rs := byLabel[label]
		var ratios, extra []float64
		days, met := map[string]bool{}, 0
		for _, r := range rs {
			ratios, extra = append(ratios, r.Ratio), append(extra, r.CtldWithMs-r.CtldStockMs)
			days[r.Date] = true
			if r.Ratio >= 0.9 {
				met++
			}
		}
		var ds []string
		for d := range days {
			ds = append(ds, d)
		}
		sort.Strings(ds)
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d of %d | %s |\n", label, strings.Join(ds, ", "), len(rs),
			spread(ratios, 3), met, len(rs), spread(extra, 2))
	}
	return b.String()
}

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

// recordRun appends the run and rewrites the section from every run.
func recordRun(doc string, r runRecord) error {
	if err := appendRun(runsPath(doc), r); err != nil {
		return err
	}
	return renderRuns(doc)
}

// renderRuns rewrites the section from the runs file (none yet: says so).
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
	return writeSection(doc, "slurm-throughput-runs", runsReport(path, runs))
}
