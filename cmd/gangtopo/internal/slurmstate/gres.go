package slurmstate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// Gres is one entry of a Slurm GRES string.
//
// The forms Slurm 22.05 prints (src/common/gres.c, src/slurmctld/gres_ctld.c):
//
//	gpu:8                    configured or used count, untyped
//	gpu:h100:8               typed
//	gpu:h100:8(S:0-1)        configured, with socket affinity
//	gpu:(null):4(IDX:0-3)    node GresUsed with indices, untyped
//	gpu:h100:0(IDX:N/A)      node GresUsed, none used
//	gpu:4(IDX:0-3,6)         a job's per-node detail
//	gpu(CNT:4)               a job's per-node detail without indices
//
// Entries are joined with commas, and an index list has commas too, so the
// split respects parentheses.
type Gres struct {
	Name  string // "gpu", "shard", ...
	Type  string // "h100"; "" when untyped
	Count int64
	// Idx lists the indices from "(IDX:...)", ascending. HasIdx tells an
	// absent list from an empty one ("IDX:N/A").
	Idx    []int
	HasIdx bool
}

// maxGresIndex bounds index lists, so a garbled "IDX:0-4000000000" cannot
// allocate gigabytes.
const maxGresIndex = 4096

// ParseGres reads a GRES string. "", "(null)" and "N/A" mean none.
func ParseGres(s string) ([]Gres, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return nil, nil
	}
	parts, err := splitTopLevel(s)
	if err != nil {
		return nil, err
	}
	out := make([]Gres, 0, len(parts))
	for _, p := range parts {
		g, err := parseGresEntry(p)
		if err != nil {
			return nil, fmt.Errorf("GRES %q: %w", s, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// splitTopLevel splits at commas outside parentheses.
func splitTopLevel(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("GRES %q: unbalanced ')'", s)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("GRES %q: unbalanced '('", s)
	}
	return append(parts, s[start:]), nil
}

func parseGresEntry(p string) (Gres, error) {
	var g Gres
	// GresUsed of an untyped GPU prints its type as "(null)".
	head, paren, hasParen := strings.Cut(strings.Replace(p, ":(null):", "::", 1), "(")
	if hasParen {
		if !strings.HasSuffix(paren, ")") {
			return g, fmt.Errorf("entry %q: text after ')'", p)
		}
		paren = paren[:len(paren)-1]
	}
	fields := strings.Split(head, ":")
	if fields[0] == "" {
		return g, fmt.Errorf("entry %q: empty name", p)
	}
	g.Name = fields[0]
	countSet := false
	switch len(fields) {
	case 1: // "gpu(CNT:4)" or a bare name (count 1)
		g.Count = 1
	case 2: // "gpu:8" or "gpu:h100" (count 1)
		if n, err := parseCount(fields[1]); err == nil {
			g.Count, countSet = n, true
		} else {
			g.Type, g.Count = fields[1], 1
		}
	case 3: // "gpu:h100:8"
		n, err := parseCount(fields[2])
		if err != nil {
			return g, fmt.Errorf("entry %q: count: %w", p, err)
		}
		g.Type, g.Count, countSet = fields[1], n, true
	default:
		return g, fmt.Errorf("entry %q: want name[:type][:count]", p)
	}
	if hasParen {
		if err := g.parseParen(paren, countSet); err != nil {
			return g, fmt.Errorf("entry %q: %w", p, err)
		}
	}
	return g, nil
}

// parseParen reads what follows an entry in parentheses: IDX, CNT or S.
func (g *Gres) parseParen(paren string, countSet bool) error {
	key, val, ok := strings.Cut(paren, ":")
	if !ok {
		return fmt.Errorf("want (IDX:...), (CNT:...) or (S:...), found (%s)", paren)
	}
	switch key {
	case "IDX":
		g.HasIdx = true
		if val == "N/A" {
			return nil
		}
		idx, err := hostlist.Indices(val, maxGresIndex)
		if err != nil {
			return fmt.Errorf("IDX: %w", err)
		}
		g.Idx = idx
	case "CNT":
		n, err := parseCount(val)
		if err != nil || countSet {
			return fmt.Errorf("bad CNT %q", val)
		}
		g.Count = n
	case "S": // socket affinity of configured GRES: not needed
		if _, err := hostlist.Indices(val, maxGresIndex); err != nil {
			return fmt.Errorf("S: %w", err)
		}
	default:
		return fmt.Errorf("unknown (%s:...) (want IDX, CNT or S)", key)
	}
	return nil
}

func parseCount(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad count %q", s)
	}
	return n, nil
}

// gpuUse is what a GRES list says about GPUs.
type gpuUse struct {
	Count  int
	Idx    []int // union of the entries' indices, ascending
	HasIdx bool  // every gpu entry listed its indices
	Types  []string
}

// gpuSummary totals the "gpu" entries of a GRES list. An entry whose index
// list disagrees with its count, or indices claimed twice, are errors.
func gpuSummary(gs []Gres) (gpuUse, error) {
	var u gpuUse
	seen := false
	u.HasIdx = true
	for _, g := range gs {
		if g.Name != "gpu" {
			continue
		}
		seen = true
		u.Count += int(g.Count)
		if !g.HasIdx {
			u.HasIdx = false
		} else if len(g.Idx) != int(g.Count) {
			return u, fmt.Errorf("gpu entry lists %d indices for a count of %d", len(g.Idx), g.Count)
		}
		u.Idx = append(u.Idx, g.Idx...)
		if g.Type != "" {
			u.Types = append(u.Types, g.Type)
		}
	}
	u.HasIdx = u.HasIdx && seen
	n := len(u.Idx)
	u.Idx = sortedUnique(u.Idx)
	if len(u.Idx) != n {
		return u, fmt.Errorf("a GPU index is listed twice")
	}
	return u, nil
}
