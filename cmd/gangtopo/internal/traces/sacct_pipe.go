package traces

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// sacct -P (--parsable2): a header row naming the --format fields, then
// one row per job and per step, fields separated by '|'. Times are local
// wall-clock "2006-01-02T15:04:05" (read as UTC: only differences matter
// to the replay), "Unknown" or "None" when unset; durations
// [D-]HH:MM:SS, MM:SS or "UNLIMITED". Rows of steps ("42.batch",
// "42.0") are not jobs and are skipped. With -D a requeued job has a row
// per run: each is a job here, in the file's order.

// SacctPipeRequired are the -P fields the replay cannot do without;
// slurmlab.SacctFormat is the full list it reads.
var SacctPipeRequired = []string{"JobID", "State", "Submit", "Start", "End", "AllocTRES"}

// pipeTime is sacct's time layout.
const pipeTime = "2006-01-02T15:04:05"

type pipeRow struct {
	name string
	line int
	col  map[string]int
	row  []string
}

func (p *pipeRow) get(field string) string {
	if i, ok := p.col[field]; ok {
		return strings.TrimSpace(p.row[i])
	}
	return ""
}

func (p *pipeRow) errorf(field, format string, args ...any) error {
	return fmt.Errorf("%s:%d: field %s: %s", p.name, p.line, field, fmt.Sprintf(format, args...))
}

func readSacctPipe(name string, r io.Reader) ([]SacctJob, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	p := &pipeRow{name: name, col: map[string]int{}}
	var jobs []SacctJob
	for sc.Scan() {
		p.line++
		text := strings.TrimRight(sc.Text(), "\r")
		if p.line == 1 {
			if err := p.header(text); err != nil {
				return nil, err
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		p.row = strings.Split(text, "|")
		if len(p.row) != len(p.col) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d as in the header (a '|' inside a field? dump with sacct -P and a --format without JobName/SubmitLine, or as JSON)", name, p.line, len(p.row), len(p.col))
		}
		if strings.Contains(p.get("JobID"), ".") {
			continue // a step
		}
		j, err := p.job()
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, p.line+1, err)
	}
	return jobs, nil
}

func (p *pipeRow) header(text string) error {
	for i, f := range strings.Split(text, "|") {
		f = strings.TrimSpace(strings.TrimPrefix(f, "\ufeff"))
		if _, dup := p.col[f]; dup {
			return fmt.Errorf("%s:1: field %q appears twice in the header", p.name, f)
		}
		p.col[f] = i
	}
	var missing []string
	for _, f := range SacctPipeRequired {
		if _, ok := p.col[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s:1: the header lacks %s: not sacct -P output, or dumped without them (need --format with at least %s)",
			p.name, strings.Join(missing, ", "), strings.Join(SacctPipeRequired, ","))
	}
	return nil
}

func (p *pipeRow) job() (SacctJob, error) {
	j := SacctJob{At: fmt.Sprintf("%s:%d", p.name, p.line), ID: p.get("JobID"), Name: p.get("JobName"), User: p.get("User"),
		Account: p.get("Account"), Partition: p.get("Partition"), QOS: p.get("QOS"), NodeList: p.get("NodeList"),
		SubmitLine: p.get("SubmitLine"), ArrayJob: -1, ArrayTask: -1, HetJob: -1, HetOffset: -1}
	if err := p.ids(&j); err != nil {
		return j, err
	}
	st, err := normState(p.get("State"))
	if err != nil {
		return j, p.errorf("State", "%v", err)
	}
	j.State = st
	if err := p.times(&j); err != nil {
		return j, err
	}
	if err := p.resources(&j); err != nil {
		return j, err
	}
	j.Scheduler = schedulerOf(strings.Split(p.get("Flags"), ","))
	j.fromSubmitLine()
	if err := j.checkTimes(); err != nil {
		return j, fmt.Errorf("%s:%d: %v", p.name, p.line, err)
	}
	return j, nil
}

// ids reads JobID ("42", "40_3", "45+1") and JobIDRaw.
func (p *pipeRow) ids(j *SacctJob) error {
	id := j.ID
	bad := func() error { return p.errorf("JobID", "%q is not a job ID (want N, N_TASK or N+OFFSET)", id) }
	var err error
	switch {
	case strings.Contains(id, "_"):
		a, t, _ := strings.Cut(id, "_")
		if j.ArrayJob, err = strconv.ParseInt(a, 10, 64); err != nil {
			return bad()
		}
		if j.ArrayTask, err = strconv.ParseInt(t, 10, 64); err != nil {
			// "40_[3-9]": tasks not yet split off, never started
			j.ArrayTask = -1
		}
	case strings.Contains(id, "+"):
		h, o, _ := strings.Cut(id, "+")
		if j.HetJob, err = strconv.ParseInt(h, 10, 64); err != nil {
			return bad()
		}
		if j.HetOffset, err = strconv.ParseInt(o, 10, 64); err != nil {
			return bad()
		}
	default:
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			return bad()
		}
	}
	raw := p.get("JobIDRaw")
	if raw == "" {
		raw, _, _ = strings.Cut(strings.Split(id, "_")[0], "+")
	}
	if j.Raw, err = strconv.ParseInt(raw, 10, 64); err != nil || j.Raw <= 0 {
		return p.errorf("JobIDRaw", "%q is not a job ID", raw)
	}
	return nil
}

func (p *pipeRow) times(j *SacctJob) error {
	for _, f := range []struct {
		field string
		t     *time.Time
	}{{"Submit", &j.Submit}, {"Eligible", &j.Eligible}, {"Start", &j.Start}, {"End", &j.End}} {
		v := p.get(f.field)
		if v == "" || v == "Unknown" || v == "None" {
			continue
		}
		t, err := time.Parse(pipeTime, v)
		if err != nil {
			return p.errorf(f.field, "%q is not a time (want YYYY-MM-DDTHH:MM:SS, Unknown or None)", v)
		}
		*f.t = t
	}
	if v := p.get("Timelimit"); v != "" {
		d, err := parseSlurmDuration(v)
		if err != nil {
			return p.errorf("Timelimit", "%v", err)
		}
		j.Limit = d
	}
	return nil
}

func (p *pipeRow) resources(j *SacctJob) error {
	req, err := parseTRES(p.get("ReqTRES"))
	if err != nil {
		return p.errorf("ReqTRES", "%v", err)
	}
	alloc, err := parseTRES(p.get("AllocTRES"))
	if err != nil {
		return p.errorf("AllocTRES", "%v", err)
	}
	for _, f := range []struct {
		field string
		v     *int
	}{{"AllocNodes", &j.Nodes}, {"ReqCPUS", &j.ReqCPUs}} {
		s := p.get(f.field)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p.errorf(f.field, "%q is not a count", s)
		}
		*f.v = n
	}
	j.setTRES(req, alloc)
	if s := p.get("ReqNodes"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p.errorf("ReqNodes", "%q is not a count", s)
		}
		j.ReqNodes = n
	}
	return nil
}

// parseSlurmDuration reads [D-]HH:MM:SS, HH:MM:SS, MM:SS (sacct's
// elapsed and time limit formats); UNLIMITED, Partition_Limit and
// INVALID are 0 (no limit known).
func parseSlurmDuration(s string) (time.Duration, error) {
	switch s {
	case "UNLIMITED", "Partition_Limit", "INVALID", "":
		return 0, nil
	}
	days := 0
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration (want [D-]HH:MM:SS)", s)
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("%q is not a duration (want [D-]HH:MM:SS)", s)
	}
	total := 0
	for i, f := range parts {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || i > 0 && n >= 60 {
			return 0, fmt.Errorf("%q is not a duration (want [D-]HH:MM:SS)", s)
		}
		total = total*60 + n
	}
	return time.Duration(days*86400+total) * time.Second, nil
}
