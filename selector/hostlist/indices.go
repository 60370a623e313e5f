package hostlist

import (
	"fmt"
	"strconv"
	"strings"
)

// Indices reads a list of indices in Slurm's bit_fmt form, the one GRES
// lines (IDX:0-3,5,7-8), CPU_IDs and the reference data print: numbers and
// ranges "lo-hi", comma-separated, ascending. The result is ascending and
// free of duplicates; an index above max, a reversed range or a list out of
// order is an error, so a garbled "0-4000000000" cannot exhaust memory.
func Indices(s string, max int) ([]int, error) {
	var out []int
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > max {
			return nil, fmt.Errorf("bad index %q in %q", r, s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a || b > max {
				return nil, fmt.Errorf("bad range %q in %q", r, s)
			}
		}
		if len(out) > 0 && a <= out[len(out)-1] {
			return nil, fmt.Errorf("indices not ascending in %q", s)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}
