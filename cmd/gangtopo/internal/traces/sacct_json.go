package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// sacct --json, every series: {"meta": ..., "errors": [...], "jobs": [...]}.
// The job objects differ by layout: 22.05 (openapi/dbv0.0.38) writes plain
// numbers and a state string; the data_parser layouts (v0.0.39 on, 24.11's
// v0.0.42, 26.05's v0.0.45) write numbers that may be unset or infinite as
// {"set", "infinite", "number"}, states as lists, and add submit_line.
// jNum and jStrs read either form, so one job type serves all; fields a
// layout adds that the replay does not use are ignored.

// jNum is a number, null, or {"set": bool, "infinite": bool, "number": n}.
type jNum struct {
	v        int64
	set, inf bool
}

// unsetNum is what 22.05 writes for NO_VAL and INFINITE in 32-bit fields.
const unsetNum = 0xfffffffe

func (n *jNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = jNum{}
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			Set      *bool    `json:"set"`
			Infinite bool     `json:"infinite"`
			Number   *float64 `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if o.Set == nil || o.Number == nil {
			return errors.New(`want {"set", "infinite", "number"}`)
		}
		*n = jNum{set: *o.Set, inf: o.Infinite}
		return n.take(*o.Number)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*n = jNum{set: true}
	return n.take(f)
}

func (n *jNum) take(f float64) error {
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return fmt.Errorf("%g is not a whole number", f)
	}
	n.v = int64(f)
	if n.v >= unsetNum && n.v <= math.MaxUint32 {
		n.set, n.inf = false, n.v == math.MaxUint32
	}
	return nil
}

// get is the number, or def when unset.
func (n jNum) get(def int64) int64 {
	if !n.set || n.inf {
		return def
	}
	return n.v
}

// jStrs is a string, a list of strings or null.
type jStrs []string

func (s *jStrs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = jStrs{v}
		return nil
	}
	var v []string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*s = v
	return nil
}

type jTRES struct {
	Type  string  `json:"type"`
	Name  *string `json:"name"`
	Count jNum    `json:"count"`
}

// sacctJSONJob is the part of a job object the replay reads.
type sacctJSONJob struct {
	JobID     jNum   `json:"job_id"`
	Name      string `json:"name"`
	User      string `json:"user"`
	Account   string `json:"account"`
	Partition string `json:"partition"`
	QOS       string `json:"qos"`
	Nodes     string `json:"nodes"`
	AllocNode jNum   `json:"allocation_nodes"`
	Array     struct {
		JobID  jNum `json:"job_id"`
		TaskID jNum `json:"task_id"`
	} `json:"array"`
	Het struct {
		JobID     jNum `json:"job_id"`
		JobOffset jNum `json:"job_offset"`
	} `json:"het"`
	State struct {
		Current jStrs `json:"current"`
	} `json:"state"`
	Time struct {
		Submission jNum `json:"submission"`
		Eligible   jNum `json:"eligible"`
		Start      jNum `json:"start"`
		End        jNum `json:"end"`
		Limit      jNum `json:"limit"` // minutes
	} `json:"time"`
	TRES struct {
		Requested []jTRES `json:"requested"`
		Allocated []jTRES `json:"allocated"`
	} `json:"tres"`
	Required struct {
		CPUs jNum `json:"CPUs"`
	} `json:"required"`
	Flags      jStrs  `json:"flags"`
	SubmitLine string `json:"submit_line"`
}

// readSacctJSON reads the jobs of sacct --json output, each with the line
// its object starts on.
func readSacctJSON(name string, r io.Reader) ([]SacctJob, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s:%d: not valid JSON: %v", name, lineAt(data, se.Offset), se)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("%s:%d: the JSON ends early (a partial dump?)", name, lineAt(data, int64(len(data))))
		}
		return fmt.Errorf("%s:%d: %v", name, lineAt(data, d.InputOffset()), err)
	}
	if _, err := d.Token(); err != nil { // {
		return nil, syntax(err)
	}
	var jobs []SacctJob
	seen := false
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, syntax(err)
		}
		switch tok {
		case "jobs":
			seen = true
			if jobs, err = readJSONJobs(name, data, d, syntax); err != nil {
				return nil, err
			}
		case "errors":
			if err := jsonErrors(name, data, d); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return nil, syntax(err)
			}
		}
	}
	if _, err := d.Token(); err != nil { // }
		return nil, syntax(err)
	}
	if !seen {
		return nil, fmt.Errorf("%s: no \"jobs\" list: not sacct --json output", name)
	}
	return jobs, nil
}

// jsonErrors fails when sacct reported errors in its output.
func jsonErrors(name string, data []byte, d *json.Decoder) error {
	at := lineAt(data, d.InputOffset())
	var errs []struct {
		Description string `json:"description"`
		Error       string `json:"error"`
	}
	if err := d.Decode(&errs); err != nil {
		return fmt.Errorf("%s:%d: \"errors\": %v", name, at, err)
	}
	if len(errs) == 0 {
		return nil
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, strings.TrimSpace(e.Error+" "+e.Description))
	}
	return fmt.Errorf("%s:%d: sacct reported errors, the dump may be partial: %s", name, at, strings.Join(msgs, "; "))
}

func readJSONJobs(name string, data []byte, d *json.Decoder, syntax func(error) error) ([]SacctJob, error) {
	if tok, err := d.Token(); err != nil {
		return nil, syntax(err)
	} else if tok != json.Delim('[') {
		return nil, fmt.Errorf("%s:%d: \"jobs\" is not a list", name, lineAt(data, d.InputOffset()))
	}
	var jobs []SacctJob
	for d.More() {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		off := d.InputOffset() - int64(len(raw))
		line := lineAt(data, off+int64(len(raw)-len(bytes.TrimLeft(raw, " \t\r\n"))))
		j, err := decodeJSONJob(raw)
		if err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fmt.Errorf("%s:%d: job field %s: %v is not what sacct writes there (want %v)", name, lineAt(data, off+te.Offset), te.Field, te.Value, te.Type)
			}
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		j.At = fmt.Sprintf("%s:%d", name, line)
		jobs = append(jobs, j)
	}
	if _, err := d.Token(); err != nil { // ]
		return nil, syntax(err)
	}
	return jobs, nil
}

func decodeJSONJob(raw []byte) (SacctJob, error) {
	var x sacctJSONJob
	if err := json.Unmarshal(raw, &x); err != nil {
		return SacctJob{}, err
	}
	j := SacctJob{Raw: x.JobID.get(0), Name: x.Name, User: x.User, Account: x.Account, Partition: x.Partition,
		QOS: x.QOS, NodeList: x.Nodes, Nodes: int(x.AllocNode.get(0)), ArrayJob: -1, ArrayTask: -1, HetJob: -1, HetOffset: -1,
		SubmitLine: x.SubmitLine, ReqCPUs: int(x.Required.CPUs.get(0))}
	if j.Raw <= 0 {
		return j, errors.New("job without a job_id")
	}
	j.ID = fmt.Sprint(j.Raw)
	if a := x.Array.JobID.get(0); a > 0 && x.Array.TaskID.set {
		j.ArrayJob, j.ArrayTask = a, x.Array.TaskID.v
		j.ID = fmt.Sprintf("%d_%d", a, j.ArrayTask)
	}
	if h := x.Het.JobID.get(0); h > 0 && x.Het.JobOffset.set {
		j.HetJob, j.HetOffset = h, x.Het.JobOffset.v
		j.ID = fmt.Sprintf("%d+%d", h, j.HetOffset)
	}
	if len(x.State.Current) == 0 {
		return j, fmt.Errorf("job %s has no state", j.ID)
	}
	st, err := normState(x.State.Current[0])
	if err != nil {
		return j, fmt.Errorf("job %s: %v", j.ID, err)
	}
	j.State = st
	tm := &x.Time
	j.Submit, j.Eligible, j.Start, j.End = unixTime(tm.Submission), unixTime(tm.Eligible), unixTime(tm.Start), unixTime(tm.End)
	if m := tm.Limit.get(0); m > 0 {
		j.Limit = time.Duration(m) * time.Minute
	}
	if err := j.jsonTRES(&x); err != nil {
		return j, err
	}
	j.Scheduler = schedulerOf(x.Flags)
	j.fromSubmitLine()
	return j, j.checkTimes()
}

func (j *SacctJob) jsonTRES(x *sacctJSONJob) error {
	var req, alloc tres
	for _, l := range []struct {
		list []jTRES
		t    *tres
	}{{x.TRES.Requested, &req}, {x.TRES.Allocated, &alloc}} {
		for _, e := range l.list {
			name := ""
			if e.Name != nil {
				name = *e.Name
			}
			if err := l.t.add(e.Type, name, e.Count.get(0)); err != nil {
				return fmt.Errorf("job %s: %v", j.ID, err)
			}
		}
	}
	j.setTRES(req, alloc)
	return nil
}

// setTRES fills the job's resources from its asked and allocated TRES.
func (j *SacctJob) setTRES(req, alloc tres) {
	j.ReqGPUs, j.GPUs, j.ReqNodes, j.CPUs, j.MemMiB = req.gpus, alloc.gpus, req.nodes, alloc.cpus, alloc.memMiB
	if j.ReqCPUs == 0 {
		j.ReqCPUs = req.cpus
	}
	if j.Nodes == 0 {
		j.Nodes = alloc.nodes
	}
	j.GPUType = alloc.gpuType
	if j.GPUType == "" {
		j.GPUType = req.gpuType
	}
}

// unixTime reads a time in seconds since the epoch; 0 and unset are the
// zero time (never started, not ended).
func unixTime(n jNum) time.Time {
	if v := n.get(0); v > 0 {
		return time.Unix(v, 0).UTC()
	}
	return time.Time{}
}

// schedulerOf names the scheduler that started a job from its flags
// (JSON: STARTED_ON_*; sacct -P: Sched*).
func schedulerOf(flags []string) string {
	for _, f := range flags {
		switch f {
		case "STARTED_ON_SUBMIT", "SchedSubmit":
			return "submit"
		case "STARTED_ON_SCHEDULE", "SchedMain":
			return "main"
		case "STARTED_ON_BACKFILL", "SchedBackfill":
			return "backfill"
		}
	}
	return ""
}
