package slurmstate

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// nodeTail are the free-text fields scontrol prints last in a node record.
var nodeTail = map[string]bool{"Reason": true, "Comment": true, "Extra": true}

// ParseScontrolNodes reads `scontrol -d show node -o` output: one line per
// node (the multi-line form without -o is accepted too). -d matters: without
// it Slurm prints no GresUsed, and the snapshot could not tell busy GPUs
// from free ones, so a missing GresUsed is an error. label names the source.
func ParseScontrolNodes(data []byte, label string) ([]Node, error) {
	recs, err := scontrolRecords(data, "NodeName=", false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	nodes := make([]Node, 0, len(recs))
	memo := gresMemo{}
	for _, r := range recs {
		f := newFields()
		n := Node{}
		err := splitPairs(r.text, nodeTail, f)
		if err == nil {
			n, err = nodeFromFields(f, memo)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d%s: %w", label, r.line, nameSuffix(f.vals["NodeName"]), err)
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 && len(bytes.TrimSpace(data)) > 0 {
		return nil, fmt.Errorf("%s: no NodeName= records", label)
	}
	if err := checkUniqueNodes(nodes); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return nodes, nil
}

// record is one scontrol record with the line it starts on. orphan: a
// job record's text that does not start with JobId= (see scontrolRecords).
type record struct {
	text   string
	line   int
	orphan bool
}

// scontrolRecords groups lines into records: a record starts with a line
// that begins with start; indented lines continue it; blank lines separate.
// With free (job records, whose names and comments may hold any text), an
// unindented line that does not start a record continues the one before
// it, or after a blank line starts an orphan record, for the record's
// parser to refuse; without, it is an error.
func scontrolRecords(data []byte, start string, free bool) ([]record, error) {
	var recs []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var cur *strings.Builder
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			cur = nil
		case strings.HasPrefix(line, start):
			recs = append(recs, record{line: ln})
			cur = &strings.Builder{}
			cur.WriteString(line)
		case cur != nil && (line[0] == ' ' || line[0] == '\t' || free):
			cur.WriteByte('\n')
			cur.WriteString(line)
		case free:
			recs = append(recs, record{line: ln, orphan: true})
			cur = &strings.Builder{}
			cur.WriteString(line)
		default:
			return nil, fmt.Errorf("line %d: want a record starting with %q, found %q", ln, start, clip(line))
		}
		if cur != nil {
			recs[len(recs)-1].text = cur.String()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return recs, nil
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// nodeFromFields interprets a node record.
func nodeFromFields(f *fields, memo gresMemo) (Node, error) {
	var n Node
	var err error
	if n.Name, err = f.need("NodeName"); err != nil {
		return n, err
	}
	state, err := f.need("State")
	if err != nil {
		return n, err
	}
	if n.State, err = ParseState(state); err != nil {
		return n, fmt.Errorf("field State: %w", err)
	}
	n.SlurmState = state
	v, err := f.needInts("CPUTot", "CPUAlloc", "ThreadsPerCore", "RealMemory", "AllocMem")
	if err != nil {
		return n, err
	}
	n.CPUs, n.AllocCPUs, n.Threads, n.MemoryMiB, n.AllocMiB = int(v[0]), int(v[1]), int(v[2]), v[3], v[4]
	if n.AllocCPUs > n.CPUs {
		return n, fmt.Errorf("field CPUAlloc: %d CPUs allocated of %d", n.AllocCPUs, n.CPUs)
	}
	gres, err := f.need("Gres")
	if err != nil {
		return n, err
	}
	if !f.has("GresUsed") {
		return n, fmt.Errorf("field GresUsed: missing (run `scontrol -d show node -o`: -d prints it)")
	}
	if err := n.setGres(memo, gres, f.vals["GresUsed"], "Gres", "GresUsed"); err != nil {
		return n, err
	}
	n.Features = splitList(f.vals["ActiveFeatures"])
	n.Partitions = splitList(f.vals["Partitions"]) // absent for a node in no partition
	n.Reason = f.vals["Reason"]
	return n, nil
}
