package hostlist

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxHosts bounds the number of names one expression may expand to.
const MaxHosts = 1 << 20

// ErrTooMany says an expression names more hosts than its bound allows;
// ExpandAtMost's error wraps it, with the expression and the bound.
var ErrTooMany = errors.New("too many host names")

// Expand returns the host names an expression denotes, in the order written.
// Duplicates are kept: callers that need a set check for them, which lets
// them report the duplicate by name.
func Expand(expr string) ([]string, error) {
	return ExpandAtMost(expr, MaxHosts)
}

// ExpandAtMost is Expand with a caller's bound on the number of names, for
// expressions a user wrote (a job's --nodelist): the bound is checked before
// any name is built, so an expression such as "n[0-999999,0-999999,...]"
// fails at once instead of allocating what it names.
func ExpandAtMost(expr string, limit int) ([]string, error) {
	terms, err := splitTop(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, fmt.Errorf("hostlist %q: empty name", expr)
		}
		names, err := expandTerm(t, limit-len(out))
		if err == nil && len(out)+len(names) > limit {
			err = ErrTooMany
		}
		if errors.Is(err, ErrTooMany) {
			return nil, fmt.Errorf("hostlist %q: names more than %d hosts: %w", expr, limit, ErrTooMany)
		}
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", expr, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at commas outside brackets and checks bracket balance.
func splitTop(expr string) ([]string, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("hostlist: empty expression")
	}
	var terms []string
	depth, start := 0, 0
	for i, r := range expr {
		switch r {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("hostlist %q: nested '[' at offset %d", expr, i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("hostlist %q: unmatched ']' at offset %d", expr, i)
			}
			depth--
		case ',':
			if depth == 0 {
				terms = append(terms, expr[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("hostlist %q: missing ']'", expr)
	}
	return append(terms, expr[start:]), nil
}

// expandTerm expands one term such as "rack[1-2]-gpu[01-04]": the first
// bracket group is expanded and the rest of the term recursively.
func expandTerm(term string, budget int) ([]string, error) {
	open := strings.IndexByte(term, '[')
	if open < 0 {
		if err := checkName(term); err != nil {
			return nil, err
		}
		return []string{term}, nil
	}
	closeIdx := strings.IndexByte(term[open:], ']') + open
	prefix, group, rest := term[:open], term[open+1:closeIdx], term[closeIdx+1:]
	nums, err := expandGroup(group, budget)
	if err != nil {
		return nil, err
	}
	tails, err := expandTerm(rest, budget/len(nums))
	if err != nil {
		return nil, err
	}
	if len(nums)*len(tails) > budget {
		return nil, ErrTooMany
	}
	if prefix != "" {
		if err := checkName(prefix); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			out = append(out, prefix+n+t)
		}
	}
	return out, nil
}

// expandGroup expands the inside of one bracket group, e.g. "01-03,7",
// failing before it builds more than budget numbers.
func expandGroup(group string, budget int) ([]string, error) {
	if group == "" {
		return nil, fmt.Errorf("empty range \"[]\"")
	}
	var out []string
	for _, part := range strings.Split(group, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		if !ok {
			hi = lo
		}
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if errA != nil || errB != nil || a < 0 || b < 0 || lo == "" || hi == "" {
			return nil, fmt.Errorf("bad range %q (want N or LO-HI with decimal numbers)", part)
		}
		if b < a {
			return nil, fmt.Errorf("bad range %q: %d is greater than %d", part, a, b)
		}
		if b-a >= budget-len(out) {
			return nil, ErrTooMany
		}
		width := len(lo)
		for i := a; i <= b; i++ {
			out = append(out, padded(i, width))
		}
	}
	return out, nil
}

// padded writes n in decimal, zero-padded to width: fmt's "%0*d" without
// its cost, since slurmctld's thread waits on every name a job's list
// expands to.
func padded(n, width int) string {
	var buf [24]byte
	d := strconv.AppendInt(buf[:0], int64(n), 10)
	if len(d) >= width {
		return string(d)
	}
	return strings.Repeat("0", width-len(d)) + string(d)
}

func checkName(s string) error {
	for _, r := range s {
		if r <= ' ' || r == ']' || r == '[' || r == ',' {
			return fmt.Errorf("bad character %q in host name %q", r, s)
		}
	}
	return nil
}

// Compress writes names as a compact hostlist expression: names that differ
// only in a trailing number of equal width are merged into bracket ranges.
// The result expands back to the same set (order: sorted by prefix, then
// number). Compress is what Slurm's own NodeList output looks like, so the
// strings it makes can be passed to Slurm unchanged.
func Compress(names []string) string {
	type key struct {
		prefix string
		width  int
	}
	groups := map[key][]int{}
	var plain []string
	var order []key
	for _, n := range names {
		p, num, width, ok := splitNumber(n)
		if !ok {
			plain = append(plain, n)
			continue
		}
		k := key{p, width}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], num)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].prefix != order[j].prefix {
			return order[i].prefix < order[j].prefix
		}
		return order[i].width < order[j].width
	})
	var terms []string
	for _, k := range order {
		terms = append(terms, compressGroup(k.prefix, k.width, groups[k]))
	}
	sort.Strings(plain)
	terms = append(terms, plain...)
	return strings.Join(terms, ",")
}

// splitNumber splits "node012" into ("node", 12, 3).
func splitNumber(name string) (prefix string, num, width int, ok bool) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) || len(name)-i > 9 {
		return "", 0, 0, false
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil {
		return "", 0, 0, false
	}
	return name[:i], n, len(name) - i, true
}

func compressGroup(prefix string, width int, nums []int) string {
	sort.Ints(nums)
	var parts []string
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] <= nums[j]+1 {
			j++
		}
		if nums[i] == nums[j] {
			parts = append(parts, fmt.Sprintf("%0*d", width, nums[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%0*d-%0*d", width, nums[i], width, nums[j]))
		}
		i = j + 1
	}
	if len(parts) == 1 && !strings.Contains(parts[0], "-") {
		return prefix + parts[0]
	}
	return prefix + "[" + strings.Join(parts, ",") + "]"
}
