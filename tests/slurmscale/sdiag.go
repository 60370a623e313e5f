package slurmscale

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Sdiag is what `sdiag` says about slurmctld since its counters were last
// reset (`sdiag --reset`): the RPCs it served, by message type and by
// user, with the time it spent on them, and its main and backfill
// scheduler cycles. Read from sdiag's text (22.05 has no sdiag --json);
// its layout is the same from 22.05 to 26.05 (src/sdiag/sdiag.c), and none
// of it is text a user can shape (user names are the system's).
type Sdiag struct {
	JobsSubmitted, JobsStarted, JobsCompleted, JobsCanceled int
	JobsPending, JobsRunning                                int
	AgentQueue, ServerThreads                               int
	Main                                                    MainSched
	Backfill                                                Backfill
	// ByType and ByUser are the RPC counters by message type
	// (REQUEST_SUBMIT_BATCH_JOB) and by user name (or uid).
	ByType map[string]RPC
	ByUser map[string]RPC
}

// RPC is one line of sdiag's RPC statistics: how many, and the time
// slurmctld spent on them in µs (from the message's arrival to its
// answer, lock waits included).
type RPC struct {
	Count   int
	TotalUs int64
}

// AveUs is the time per RPC, µs.
func (r RPC) AveUs() float64 {
	if r.Count == 0 {
		return 0
	}
	return float64(r.TotalUs) / float64(r.Count)
}

// Add sums two counters.
func (r RPC) Add(o RPC) RPC { return RPC{r.Count + o.Count, r.TotalUs + o.TotalUs} }

// MainSched is the main scheduler's cycle statistics (µs, jobs).
type MainSched struct {
	LastUs, MaxUs, MeanUs int64
	Cycles, MeanDepth     int
	PerMinute, QueueLen   int
}

// Backfill is the backfill scheduler's cycle statistics: its cycles' time
// (µs) and how many jobs a cycle looked at (DepthMean: jobs tested per
// cycle; DepthTryMean: jobs it tried to start).
type Backfill struct {
	Cycles, LastDepth, DepthMean, DepthTryMean int
	LastUs, MaxUs, MeanUs                      int64
	Backfilled, QueueLen, QueueLenMean         int
}

var (
	rpcRe     = regexp.MustCompile(`^\s+(\S+)\s*\(\s*(\d+)\)\s+count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)`)
	sectionRe = regexp.MustCompile(`^(Main schedule statistics|Backfilling stats|Remote Procedure Call statistics by message type|Remote Procedure Call statistics by user|Pending RPC statistics|Pending RPCs)`)
)

// ParseSdiag reads sdiag's output.
func ParseSdiag(out string) (*Sdiag, error) {
	s := &Sdiag{ByType: map[string]RPC{}, ByUser: map[string]RPC{}}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sawMain := false
	for sc.Scan() {
		line := sc.Text()
		if m := sectionRe.FindStringSubmatch(line); m != nil {
			section, sawMain = m[1], sawMain || m[1] == "Main schedule statistics"
			continue
		}
		if m := rpcRe.FindStringSubmatch(line); m != nil {
			count, _ := strconv.Atoi(m[3])
			total, _ := strconv.ParseInt(m[5], 10, 64)
			switch section {
			case "Remote Procedure Call statistics by message type":
				s.ByType[m[1]] = RPC{count, total}
			case "Remote Procedure Call statistics by user":
				s.ByUser[m[1]] = RPC{count, total}
			}
			continue
		}
		key, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		s.set(section, strings.TrimSpace(key), strings.TrimSpace(val))
	}
	if !sawMain {
		return nil, fmt.Errorf("sdiag: no main scheduler statistics in its output (%q...)", firstLine(out))
	}
	return s, sc.Err()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// set stores one "Key: value" line of a section.
func (s *Sdiag) set(section, key, val string) {
	n, err := strconv.ParseInt(strings.Fields(val + " x")[0], 10, 64)
	if err != nil {
		return // a date, N/A
	}
	i := int(n)
	fields := map[string]map[string]func(){
		"": {"Jobs submitted": func() { s.JobsSubmitted = i }, "Jobs started": func() { s.JobsStarted = i },
			"Jobs completed": func() { s.JobsCompleted = i }, "Jobs canceled": func() { s.JobsCanceled = i },
			"Jobs pending": func() { s.JobsPending = i }, "Jobs running": func() { s.JobsRunning = i },
			"Agent queue size": func() { s.AgentQueue = i }, "Server thread count": func() { s.ServerThreads = i }},
		"Main schedule statistics": {"Last cycle": func() { s.Main.LastUs = n }, "Max cycle": func() { s.Main.MaxUs = n },
			"Total cycles": func() { s.Main.Cycles = i }, "Mean cycle": func() { s.Main.MeanUs = n },
			"Mean depth cycle": func() { s.Main.MeanDepth = i }, "Cycles per minute": func() { s.Main.PerMinute = i },
			"Last queue length": func() { s.Main.QueueLen = i }},
		"Backfilling stats": {"Total cycles": func() { s.Backfill.Cycles = i }, "Last cycle": func() { s.Backfill.LastUs = n },
			"Max cycle": func() { s.Backfill.MaxUs = n }, "Mean cycle": func() { s.Backfill.MeanUs = n },
			"Last depth cycle": func() { s.Backfill.LastDepth = i }, "Depth Mean": func() { s.Backfill.DepthMean = i },
			"Depth Mean (try depth)":                               func() { s.Backfill.DepthTryMean = i },
			"Total backfilled jobs (since last stats cycle start)": func() { s.Backfill.Backfilled = i },
			"Last queue length":                                    func() { s.Backfill.QueueLen = i }, "Queue length mean": func() { s.Backfill.QueueLenMean = i }},
	}
	if f, ok := fields[section][key]; ok {
		f()
	}
}

// Total sums the RPCs of every type.
func (s *Sdiag) Total() RPC {
	var t RPC
	for _, r := range s.ByType {
		t = t.Add(r)
	}
	return t
}

// TypesTotal sums the RPCs of the given types.
func (s *Sdiag) TypesTotal(types []string) RPC {
	var t RPC
	for _, name := range types {
		t = t.Add(s.ByType[name])
	}
	return t
}

// UsersTotal sums the RPCs of every user.
func (s *Sdiag) UsersTotal() RPC {
	var t RPC
	for _, r := range s.ByUser {
		t = t.Add(r)
	}
	return t
}
