package slurmstate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// RPCStats is what sdiag says of the RPCs slurmctld served since its
// counters were last reset ("Data since"): by message type, how many and
// the time spent on them, from each message's arrival to its answer, lock
// waits included. The controller reads it to keep its own share of that
// time under a bound (controller/rpcshare.go).
//
// It is read from sdiag's text: 22.05's sdiag has no --json, and the
// section read has the same layout from 22.05 to 26.05 (src/sdiag/sdiag.c).
// Only the "by message type" section is read: message type names are
// Slurm's own, nothing a user can shape (the "by user" section, which
// names users, is skipped).
type RPCStats struct {
	// Since is when the counters were last reset (sdiag --reset, or
	// slurmctld's daily reset); a reading with another Since than the one
	// before it cannot be subtracted from it.
	Since time.Time
	// ByType is each message type's counters (REQUEST_NODE_INFO, ...).
	ByType map[string]RPCCount
}

// RPCCount is one message type's counters.
type RPCCount struct {
	Count   int64
	TotalUs int64 // µs
}

var (
	sdiagSinceRe = regexp.MustCompile(`^Data since\s.*\((\d+)\)\s*$`)
	sdiagTypeRe  = regexp.MustCompile(`^\s+([A-Z0-9_]+)\s*\(\s*\d+\)\s+count:(\d+)\s+ave_time:\d+\s+total_time:(\d+)\s*$`)
)

// ParseSdiag reads sdiag's output: the time its counters were reset and
// the section "Remote Procedure Call statistics by message type". An
// output without a "Data since" line or without that section (not sdiag's,
// or a layout this release does not know) is an error that says so.
func ParseSdiag(out []byte, source string) (*RPCStats, error) {
	st := &RPCStats{ByType: map[string]RPCCount{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	inTypes, sawTypes := false, false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := sdiagSinceRe.FindStringSubmatch(line); m != nil {
			sec, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s, line %d: %q: the reset time is not a Unix time", source, n, line)
			}
			st.Since = time.Unix(sec, 0)
			continue
		}
		if line == "" || line[0] != ' ' && line[0] != '\t' {
			inTypes = line == "Remote Procedure Call statistics by message type"
			sawTypes = sawTypes || inTypes
			continue
		}
		if !inTypes {
			continue
		}
		m := sdiagTypeRe.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s, line %d: %q: want \"TYPE (number) count:N ave_time:N total_time:N\"", source, n, line)
		}
		count, err1 := strconv.ParseInt(m[2], 10, 64)
		total, err2 := strconv.ParseInt(m[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s, line %d: %q: a counter out of range", source, n, line)
		}
		st.ByType[m[1]] = RPCCount{Count: count, TotalUs: total}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	switch {
	case st.Since.IsZero():
		return nil, fmt.Errorf("%s: no \"Data since\" line: not sdiag's output?", source)
	case !sawTypes:
		return nil, fmt.Errorf("%s: no section \"Remote Procedure Call statistics by message type\": not sdiag's output?", source)
	}
	return st, nil
}

// ReadRPCStats runs sdiag (with the poll's timeout, or reads
// PollConfig.Files[Sdiag]) and parses it.
func (p *Poller) ReadRPCStats(ctx context.Context) (*RPCStats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out, err := p.read(ctx, Sdiag)
	if err != nil {
		return nil, err
	}
	return ParseSdiag(out, label(p.cfg, Sdiag))
}

// Sub is the counters served between earlier and r, by type (types
// earlier did not have count from zero); ok is false when the counters
// were reset in between (another Since, or a counter that went down).
func (r *RPCStats) Sub(earlier *RPCStats) (map[string]RPCCount, bool) {
	if earlier == nil || !r.Since.Equal(earlier.Since) {
		return nil, false
	}
	out := make(map[string]RPCCount, len(r.ByType))
	for t, c := range r.ByType {
		e := earlier.ByType[t]
		if c.Count < e.Count || c.TotalUs < e.TotalUs {
			return nil, false
		}
		if c.Count > e.Count {
			out[t] = RPCCount{Count: c.Count - e.Count, TotalUs: c.TotalUs - e.TotalUs}
		}
	}
	return out, true
}
