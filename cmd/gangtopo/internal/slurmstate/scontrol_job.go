package slurmstate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// jobLineFields are the scontrol job fields that fill their whole line and
// may contain spaces (src/api/job_info.c prints each on its own line).
var jobLineFields = []string{"AdminComment=", "SystemComment=", "Comment=", "Command=", "WorkDir=", "StdErr=", "StdIn=", "StdOut=", "Reservation=", "Prefer=", "ClusterFeatures="}

// ParseScontrolJobs reads `scontrol -d show job` output (the multi-line
// form; records separated by blank lines) and returns the jobs that hold
// resources. -d adds the per-node lines
//
//	Nodes=node[01-02] CPU_IDs=0-3 Mem=1024 GRES=gpu:4(IDX:0-3)
//
// that give each node's CPUs, memory and GPU indices; a holding job without
// them is unreadable. label names the source.
//
// scontrol prints job names and comments as they are, newlines included,
// so a user can put lines in them that read like Slurm's own, or break a
// record. The text is therefore never trusted on its own: a record that
// does not parse is returned in unreadable (its job left out) rather than
// failing the whole output, and every job is marked FromText, whose claims
// BuildSnapshot checks against the nodes'. Only output that is not
// scontrol's job listing at all is an error.
func ParseScontrolJobs(data []byte, label string) (jobs []Job, unreadable []Unreadable, err error) {
	return parseScontrolJobs(data, label, nil)
}

// parseScontrolJobs is ParseScontrolJobs that also counts every job's
// decision into dec (when not nil).
func parseScontrolJobs(data []byte, label string, dec Decisions) (jobs []Job, unreadable []Unreadable, err error) {
	recs, err := scontrolRecords(data, "JobId=", true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", label, err)
	}
	for _, r := range recs {
		j, holds, err := jobFromRecord(r.text, dec)
		if err != nil {
			unreadable = append(unreadable, Unreadable{Line: r.line, ID: j.ID, Err: err})
			continue
		}
		if holds {
			j.FromText = true
			jobs = append(jobs, j)
		}
	}
	started := 0
	for _, r := range recs {
		if !r.orphan {
			started++
		}
	}
	if started == 0 && strings.TrimSpace(string(data)) != "" && !strings.Contains(string(data), "No jobs in the system") {
		return nil, nil, fmt.Errorf("%s: no JobId= records", label)
	}
	return jobs, unreadable, nil
}

// Unreadable is a job record of scontrol's text that did not parse.
type Unreadable struct {
	Line int    // where the record starts
	ID   string // the job's ID, when read before the failure
	Err  error
}

func (u Unreadable) String() string {
	id := "a job"
	if u.ID != "" {
		id = "job " + u.ID
	}
	return fmt.Sprintf("%s (record at line %d): %v", id, u.Line, u.Err)
}

// jobFromRecord reads one job record line by line.
func jobFromRecord(text string, dec Decisions) (Job, bool, error) {
	var j Job
	f := newFields()
	var details []string
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Nodes="):
			details = append(details, t)
			continue
		case strings.HasPrefix(t, "JobId="):
			// JobName comes last on the first line and may contain spaces.
			head, name, _ := strings.Cut(t, " JobName=")
			if err := f.set("JobName", name); err != nil {
				return j, false, err
			}
			t = head
		}
		if k := lineField(t); k != "" {
			if err := f.set(strings.TrimSuffix(k, "="), strings.TrimPrefix(t, k)); err != nil {
				return j, false, err
			}
			continue
		}
		if err := splitPairs(t, nil, f); err != nil {
			return j, false, err
		}
	}
	return jobFromFields(f, details, dec)
}

func lineField(t string) string {
	for _, k := range jobLineFields {
		if strings.HasPrefix(t, k) {
			return k
		}
	}
	return ""
}

func jobFromFields(f *fields, details []string, dec Decisions) (Job, bool, error) {
	var j Job
	var err error
	if j.ID, err = f.need("JobId"); err != nil {
		return j, false, err
	}
	if j.State, err = f.need("JobState"); err != nil {
		return j, false, err
	}
	holds, ok := jobHolds(j.State)
	if !ok {
		return j, false, fmt.Errorf("field JobState: unknown job state %q", j.State)
	}
	admin := strings.TrimSpace(f.vals["AdminComment"])
	dec.add(admin)
	if !holds {
		return j, false, nil
	}
	user, err := f.need("UserId")
	if err != nil {
		return j, false, err
	}
	j.User, _, _ = strings.Cut(user, "(") // "alice(1000)"
	j.Partition = f.vals["Partition"]
	if j.NodeList, err = f.need("NodeList"); err != nil {
		return j, false, err
	}
	cpus, err := f.need("NumCPUs")
	if err != nil {
		return j, false, err
	}
	lo, _, _ := strings.Cut(cpus, "-") // a range "2-4" when a maximum was asked
	if j.CPUs, err = strconv.Atoi(lo); err != nil || j.CPUs < 0 {
		return j, false, fmt.Errorf("field NumCPUs: want a count, found %q", cpus)
	}
	j.GangTopology, j.Models = requestFrom(admin)
	if len(details) == 0 {
		return j, false, fmt.Errorf("no per-node Nodes= lines for a %s job (run `scontrol -d show job`: -d prints them)", j.State)
	}
	for _, d := range details {
		nodes, err := detailNodes(d)
		if err != nil {
			return j, false, fmt.Errorf("%q: %w", clip(d), err)
		}
		j.Nodes = append(j.Nodes, nodes...)
	}
	return j, true, nil
}

// detailNodes reads one "Nodes=... CPU_IDs=... Mem=... GRES=..." line; it
// may stand for several nodes with the same allocation.
func detailNodes(line string) ([]JobNode, error) {
	f := newFields()
	if err := splitPairs(line, nil, f); err != nil {
		return nil, err
	}
	expr, err := f.need("Nodes")
	if err != nil {
		return nil, err
	}
	names, err := hostlist.Expand(expr)
	if err != nil {
		return nil, fmt.Errorf("field Nodes: %w", err)
	}
	ids, err := f.need("CPU_IDs")
	if err != nil {
		return nil, err
	}
	cpus, err := countIDs(ids)
	if err != nil {
		return nil, fmt.Errorf("field CPU_IDs: %w", err)
	}
	mem, err := f.needInt("Mem")
	if err != nil {
		return nil, err
	}
	gres, err := f.need("GRES")
	if err != nil {
		return nil, err
	}
	var tmpl JobNode
	if err := tmpl.setGres(nil, gres); err != nil {
		return nil, fmt.Errorf("field GRES: %w", err)
	}
	out := make([]JobNode, len(names))
	for i, n := range names {
		out[i] = tmpl
		out[i].Name, out[i].CPUs, out[i].MemMiB = n, cpus, mem
	}
	return out, nil
}
