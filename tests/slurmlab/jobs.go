package slurmlab

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// Job is what `scontrol -d -o show job` says about a job, reduced to what
// the tests assert on.
type Job struct {
	ID           string
	State        string // RUNNING, PENDING, ...
	Reason       string
	Nodes        []string         // expanded NodeList, sorted
	GPUs         map[string][]int // node -> GPU indices (GRES IDX)
	Features     string
	Prefer       string
	ReqNodes     string
	ExcNodes     string
	Comment      string
	AdminComment string
	TresPerNode  string
	TresPerJob   string
	NumNodes     int
	Fields       map[string]string // every Key=Value of the job (the last one wins)
}

// NumGPUs counts the job's GPUs.
func (j *Job) NumGPUs() int {
	n := 0
	for _, g := range j.GPUs {
		n += len(g)
	}
	return n
}

// Submit runs sbatch --parsable with args and returns the job ID.
func (l *Lab) Submit(ctx context.Context, env []string, args ...string) (string, error) {
	argv := append([]string{"--parsable"}, args...)
	out, errOut, err := l.RunSplit(ctx, DefaultTimeout, env, "sbatch", argv...)
	if err != nil {
		return "", fmt.Errorf("sbatch %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut))
	}
	id := strings.TrimSpace(out)
	if i := strings.IndexByte(id, ';'); i >= 0 {
		id = id[:i] // "ID;cluster"
	}
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job ID", out)
	}
	return id, nil
}

// ShowJob reads one job.
func (l *Lab) ShowJob(ctx context.Context, id string) (*Job, error) {
	out, err := l.Run(ctx, DefaultTimeout, "scontrol", "-d", "-o", "show", "job", id)
	if err != nil {
		return nil, err
	}
	j, err := ParseJob(out)
	if err != nil {
		return nil, err
	}
	return j, nil
}

func nullable(s string) string {
	if s == "(null)" {
		return ""
	}
	return s
}

var (
	keyRe  = regexp.MustCompile(`^([A-Z][A-Za-z_/:]*)=(.*)$`)
	gresRe = regexp.MustCompile(`^gpu(?::[^:(]+)?:(\d+)\(IDX:([0-9,\-]*)\)`)
)

// ParseJob reads one line of `scontrol -d -o show job`. Values with spaces
// are glued back to their key; per-node detail ("Nodes=n CPU_IDs=.. GRES=
// gpu:8(IDX:0-7)") fills GPUs.
func ParseJob(line string) (*Job, error) {
	j := &Job{GPUs: map[string][]int{}, Fields: map[string]string{}}
	var key, detailNodes string
	for _, tok := range strings.Fields(line) {
		m := keyRe.FindStringSubmatch(tok)
		if m == nil {
			if key != "" {
				j.Fields[key] += " " + tok
			}
			continue
		}
		key = m[1]
		j.Fields[key] = m[2]
		switch key {
		case "Nodes":
			detailNodes = m[2]
		case "GRES":
			if err := j.addGRES(detailNodes, m[2]); err != nil {
				return nil, err
			}
		}
	}
	f := j.Fields
	j.ID, j.State, j.Reason = f["JobId"], f["JobState"], f["Reason"]
	j.Features, j.Prefer, j.ReqNodes, j.ExcNodes = nullable(f["Features"]), nullable(f["Prefer"]), nullable(f["ReqNodeList"]), nullable(f["ExcNodeList"])
	j.TresPerNode, j.TresPerJob = f["TresPerNode"], f["TresPerJob"]
	// Comments may hold blanks and lower-case key=value words: ParseJob
	// glues those back to the comment (keys start with a capital letter).
	j.Comment, j.AdminComment = nullable(f["Comment"]), nullable(f["AdminComment"])
	j.NumNodes, _ = strconv.Atoi(strings.SplitN(f["NumNodes"], "-", 2)[0])
	if j.ID == "" {
		return nil, fmt.Errorf("no JobId in %q", line)
	}
	if nl := nullable(f["NodeList"]); nl != "" {
		nodes, err := hostlist.Expand(nl)
		if err != nil {
			return nil, fmt.Errorf("job %s: NodeList: %w", j.ID, err)
		}
		sort.Strings(nodes)
		j.Nodes = nodes
	}
	return j, nil
}

func (j *Job) addGRES(nodes, gres string) error {
	m := gresRe.FindStringSubmatch(gres)
	if m == nil || nodes == "" {
		return nil // no GPUs on these nodes
	}
	idx, err := expandInts(m[2])
	if err != nil {
		return fmt.Errorf("GRES %q: %w", gres, err)
	}
	names, err := hostlist.Expand(nodes)
	if err != nil {
		return err
	}
	for _, n := range names {
		j.GPUs[n] = idx
	}
	return nil
}

// expandInts reads "0-3,6".
func expandInts(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// WaitSettled waits until the job runs, or pends with the same reason for
// `stable` (the reference runs' rule: Slurm 22.05 starts a batch job 1-3 s
// after submission, and a pending job's first reason may be transient).
func (l *Lab) WaitSettled(ctx context.Context, id string, stable, limit time.Duration) (*Job, error) {
	deadline := time.Now().Add(limit)
	var since time.Time
	var lastReason string
	for {
		j, err := l.ShowJob(ctx, id)
		if err != nil {
			return nil, err
		}
		switch {
		case j.State == "RUNNING" || j.State == "COMPLETED" || j.State == "FAILED" || j.State == "CANCELLED":
			return j, nil
		case j.State == "PENDING" && j.Reason != "None" && j.Reason == lastReason:
			if time.Since(since) >= stable {
				return j, nil
			}
		default:
			lastReason, since = j.Reason, time.Now()
		}
		if time.Now().After(deadline) {
			return j, fmt.Errorf("job %s not settled after %v: %s (%s)", id, limit, j.State, j.Reason)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// CancelAll cancels every job and waits until all nodes are idle again, so
// each scenario starts from an empty cluster.
func (l *Lab) CancelAll(ctx context.Context) error {
	if _, err := l.Run(ctx, DefaultTimeout, "scancel", "--quiet", "-u", "root"); err != nil {
		return err
	}
	return l.WaitNodesIdle(ctx, 30*time.Second)
}
