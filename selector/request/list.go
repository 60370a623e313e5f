package request

import "strings"

// SplitList reads a comma-separated list as Slurm's options give them
// (--partition=a,b, --exclude, a model list): items trimmed of spaces,
// empty items dropped.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
