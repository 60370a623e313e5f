package hostlist

import "strings"

// Less reports whether name a sorts before b in natural order, the order
// Slurm and administrators read node and device names in: runs of digits
// compare as numbers, so "node2" < "node10" and "mlx5_2" < "mlx5_10".
// Numbers of any length compare exactly (no integer overflow). Names that
// are naturally equal but spelt differently ("node01", "node1") fall back to
// byte order, so Less is a strict total order fit for sort.Slice.
func Less(a, b string) bool {
	x, y := a, b
	for x != "" && y != "" {
		dx, dy := leadingDigits(x), leadingDigits(y)
		if dx != "" && dy != "" {
			nx, ny := strings.TrimLeft(dx, "0"), strings.TrimLeft(dy, "0")
			if len(nx) != len(ny) {
				return len(nx) < len(ny)
			}
			if nx != ny {
				return nx < ny
			}
			x, y = x[len(dx):], y[len(dy):]
			continue
		}
		if x[0] != y[0] {
			return x[0] < y[0]
		}
		x, y = x[1:], y[1:]
	}
	if len(x) != len(y) {
		return len(x) < len(y)
	}
	return a < b
}

// leadingDigits returns the run of ASCII digits s starts with.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}
