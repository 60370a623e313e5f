package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

// Reading a job for `gangtopo why` and `gangtopo unbind`: from Slurm's
// JSON, `squeue --json` (slurmstate.Record), where each value is a JSON
// string of its own, so that no job's name or comment can pass for
// another field. A saved `scontrol -o show job` text is still read by
// why --job-file (saved outputs of earlier releases), as it was.

// whyTimeout bounds why's squeue.
const whyTimeout = 15 * time.Second

// readWhyJob reads job id: from squeue --json, or from file ("-":
// standard input) holding saved squeue --json output or scontrol text.
func readWhyJob(id, file string) (slurmJob, error) {
	var data []byte
	var err error
	switch file {
	case "":
		r, ok, err := slurmstate.ReadJob(context.Background(), "", whyTimeout, id)
		if err != nil {
			return slurmJob{}, err
		}
		if !ok {
			return slurmJob{}, fmt.Errorf("job %s: Slurm knows no such job (squeue --json lists none)", id)
		}
		return jobFromRecord(r, id), nil
	case "-":
		data, err = io.ReadAll(os.Stdin)
	default:
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return slurmJob{}, asUsage(err)
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		r, ok, err := slurmstate.FindRecord(data, file, id)
		if err != nil {
			return slurmJob{}, asUsage(err)
		}
		if !ok {
			return slurmJob{}, fmt.Errorf("job %s: not found in %s", id, file)
		}
		return jobFromRecord(r, id), nil
	}
	return parseSlurmJob(string(data), id)
}

// jobFromRecord is a job as why and unbind read it, from squeue --json.
func jobFromRecord(r slurmstate.Record, id string) slurmJob {
	return slurmJob{id: id, state: r.State, reason: r.Reason, nodes: r.Nodes, features: r.Features, prefer: r.Prefer,
		comment: r.Comment, adm: r.AdminComment, excluded: r.ExcNodes}
}

// jobRecords splits scontrol's output into one line per job: -o prints
// each job on a line; without it a job is a JobId= line followed by
// indented lines, and jobs are separated by blank lines.
func jobRecords(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "JobId="):
			out = append(out, line)
		case strings.TrimSpace(line) != "" && len(out) > 0:
			out[len(out)-1] += " " + strings.TrimSpace(line)
		}
	}
	return out
}

var whyKey = regexp.MustCompile(`^([A-Z][A-Za-z_/:]*)=(.*)$`)

// parseSlurmJob reads job id from saved `scontrol show job` output (with or
// without -o);
// values with blanks (comments) are glued back to their key, as scontrol's
// keys start with a capital letter and the decision line's do not. A
// job's own text (its name, its comment) can hold words that read as
// scontrol's keys: this reads only saved files an administrator gives,
// never what gangtopo acts on.
func parseSlurmJob(text, id string) (slurmJob, error) {
	for _, line := range jobRecords(text) {
		f := map[string]string{}
		key := ""
		for _, tok := range strings.Fields(line) {
			if m := whyKey.FindStringSubmatch(tok); m != nil {
				key = m[1]
				if _, dup := f[key]; !dup {
					f[key] = m[2]
				}
			} else if key != "" {
				f[key] += " " + tok
			}
		}
		if f["JobId"] != id {
			continue
		}
		null := func(k string) string {
			if v := f[k]; v != "(null)" {
				return v
			}
			return ""
		}
		return slurmJob{id: id, state: f["JobState"], reason: f["Reason"], nodes: null("NodeList"),
			features: null("Features"), prefer: null("Prefer"), comment: null("Comment"), adm: null("AdminComment"),
			excluded: null("ExcNodeList")}, nil
	}
	return slurmJob{}, fmt.Errorf("job %s: not found in scontrol's output", id)
}
