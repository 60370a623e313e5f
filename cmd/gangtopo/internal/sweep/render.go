package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteTable prints one aligned table per workload: each policy's
// unallocated GPU % and fragmentation rate at 100% and 130% arrived (mean
// ± sd over seeds) and, where the FGD authors published the same cell, their
// figures and our difference.
func WriteTable(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	prev := ""
	for _, c := range cells {
		if c.Workload != prev {
			if prev != "" {
				fmt.Fprintln(tw)
			}
			prev = c.Workload
			fmt.Fprintf(tw, "%s\tunalloc@100\tunalloc@130\tfrag%%@100\tfrag%%@130\tpub@100\tpub@130\tΔ@100\tΔ@130\trun\t\n", c.Workload)
		}
		o := c.Ours
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t", c.Policy, pm(o.Unalloc[0]), pm(o.Unalloc[1]), f2(o.FragRatio[0].Mean), f2(o.FragRatio[1].Mean))
		if p := c.Published; p != nil {
			fmt.Fprintf(tw, "%s\t%s\t%+.2f\t%+.2f\t", f2(p.Unalloc[0].Mean), f2(p.Unalloc[1].Mean), o.Unalloc[0].Mean-p.Unalloc[0].Mean, o.Unalloc[1].Mean-p.Unalloc[1].Mean)
		} else {
			fmt.Fprint(tw, "-\t-\t-\t-\t")
		}
		fmt.Fprintf(tw, "%s\t\n", c.RunTime.Round(time.Millisecond))
	}
	return tw.Flush()
}

func pm(s Stat) string { return fmt.Sprintf("%.2f ± %.2f", s.Mean, s.SD) }

func f2(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// CSVHeader is the header of WriteCSV's output.
var CSVHeader = []string{
	"workload", "policy", "seeds",
	"unalloc_100", "unalloc_100_sd", "unalloc_130", "unalloc_130_sd",
	"frag_amount_100", "frag_amount_130", "frag_ratio_100", "frag_ratio_130",
	"pub_unalloc_100", "pub_unalloc_130", "pub_frag_ratio_100", "pub_frag_ratio_130",
	"run_seconds",
}

// WriteCSV writes one row per workload and policy (see CSVHeader).
func WriteCSV(w io.Writer, cells []Cell) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, c := range cells {
		o := c.Ours
		row := []string{c.Workload, c.Policy, strconv.Itoa(o.Unalloc[0].N),
			g(o.Unalloc[0].Mean), g(o.Unalloc[0].SD), g(o.Unalloc[1].Mean), g(o.Unalloc[1].SD),
			g(o.FragAmount[0].Mean), g(o.FragAmount[1].Mean), g(o.FragRatio[0].Mean), g(o.FragRatio[1].Mean)}
		if p := c.Published; p != nil {
			row = append(row, g(p.Unalloc[0].Mean), g(p.Unalloc[1].Mean), g(p.FragRatio[0].Mean), g(p.FragRatio[1].Mean))
		} else {
			row = append(row, "", "", "", "")
		}
		row = append(row, strconv.FormatFloat(c.RunTime.Seconds(), 'f', 3, 64))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func g(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', 4, 64)
}
