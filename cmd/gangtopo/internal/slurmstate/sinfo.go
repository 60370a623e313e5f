package slurmstate

import (
	"fmt"
	"strings"
)

// ParseSinfoJSON reads `sinfo --json` output of Slurm 22.05. label names
// the source in errors ("sinfo --json", or a file). Every node must carry
// the fields the snapshot needs; a missing or mistyped one is an error
// naming the node and the field. Later series' sinfo --json lists groups
// of nodes, not nodes: refused, naming the command that lists nodes
// (ParseScontrolNodesJSON).
func ParseSinfoJSON(data []byte, label string) (nodes []Node, version string, err error) {
	nodes, m, err := parseNodesJSON(data, "nodes")
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", label, err)
	}
	return nodes, m.release, nil
}

// ParseScontrolNodesJSON reads `scontrol --json show nodes` output (Slurm
// 23.02 and later): the same node facts as 22.05's sinfo --json, one
// record per node.
func ParseScontrolNodesJSON(data []byte, label string) (nodes []Node, version string, err error) {
	nodes, m, err := parseNodesJSON(data, "nodes")
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", label, err)
	}
	return nodes, m.release, nil
}

// parseNodesJSON reads a document listing nodes under list.
func parseNodesJSON(data []byte, list string) ([]Node, docMeta, error) {
	var nodes []Node
	s := &jsonScanner{data: data, memo: gresMemo{}}
	m, saw, err := s.openAPIDoc(list, func(i int) error {
		n, err := s.sinfoNode()
		if err != nil {
			return fmt.Errorf("nodes[%d]%s: %w", i, nameSuffix(n.Name), err)
		}
		nodes = append(nodes, n)
		return nil
	})
	if err == nil && !saw {
		if m.layout == layoutDataParser {
			return nil, m, &groupedSinfoError{m}
		}
		err = fmt.Errorf("no %q list", list)
	}
	if err == nil {
		err = checkUniqueNodes(nodes)
	}
	return nodes, m, err
}

// openAPIDoc reads a Slurm --json document: it checks meta, fails on the
// errors Slurm lists, and calls each for every element of the list named
// list; saw says the list was there.
func (s *jsonScanner) openAPIDoc(list string, each func(i int) error) (m docMeta, saw bool, err error) {
	sawMeta := false
	err = s.object(func(key []byte) error {
		switch string(key) {
		case "meta":
			var err error
			m, err = s.meta()
			sawMeta = true
			return err
		case "errors":
			return s.slurmErrors()
		case list:
			saw = true
			return s.array(each)
		default:
			return s.skip()
		}
	})
	if err == nil {
		err = s.end()
	}
	if err == nil && !sawMeta {
		err = fmt.Errorf("no meta: not the output of a Slurm --json command")
	}
	return m, saw, err
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

func checkUniqueNodes(nodes []Node) error {
	seen := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		if seen[n.Name] {
			return fmt.Errorf("node %s listed twice", n.Name)
		}
		seen[n.Name] = true
	}
	return nil
}

// slurmErrors fails when Slurm listed errors in its output.
func (s *jsonScanner) slurmErrors() error {
	var msgs []string
	err := s.array(func(int) error {
		msg := "(no message)"
		err := s.object(func(key []byte) error {
			if string(key) == "error" || string(key) == "description" {
				v, err := s.str()
				if v != "" {
					msg = v
				}
				return err
			}
			return s.skip()
		})
		msgs = append(msgs, msg)
		return err
	})
	if err != nil {
		return fmt.Errorf("errors: %w", err)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("Slurm reported errors: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// Fields every sinfo node must have.
const (
	fName = 1 << iota
	fState
	fFlags
	fCPUs
	fAllocCPUs
	fMemory
	fAllocMem
	fGres
	fGresUsed
	fPartitions
	sinfoRequired = fName | fState | fFlags | fCPUs | fAllocCPUs | fMemory | fAllocMem | fGres | fGresUsed | fPartitions
)

var sinfoFieldNames = []string{"name", "state", "state_flags", "cpus", "alloc_cpus", "real_memory", "alloc_memory", "gres", "gres_used", "partitions"}

// sinfoRaw holds a node's fields as read, before interpretation.
type sinfoRaw struct {
	state, gres, gresUsed string
	flags                 []string
}

func (s *jsonScanner) sinfoNode() (Node, error) {
	var n Node
	var raw sinfoRaw
	seen := 0
	var field []byte // the key being read, for errors (aliases the input)
	err := s.object(func(key []byte) error {
		field = key
		bit, err := s.sinfoField(field, &n, &raw)
		seen |= bit
		return err
	})
	if err != nil {
		return n, fmt.Errorf("field %s: %w", field, err)
	}
	if seen&sinfoRequired != sinfoRequired {
		return n, fmt.Errorf("field %s: missing", firstMissing(seen, sinfoRequired, sinfoFieldNames))
	}
	return n, n.interpret(raw, s.memo)
}

func firstMissing(seen, required int, names []string) string {
	for i, name := range names {
		if required&(1<<i) != 0 && seen&(1<<i) == 0 {
			return name
		}
	}
	return "?"
}

// sinfoField reads one node field into n and returns its bit (0 for fields
// not needed, which are skipped).
func (s *jsonScanner) sinfoField(key []byte, n *Node, raw *sinfoRaw) (int, error) {
	var err error
	switch string(key) {
	case "name":
		n.Name, err = s.str()
		if err == nil && n.Name == "" {
			err = fmt.Errorf("empty node name")
		}
		return fName, err
	case "state":
		// 22.05: "mixed" and state_flags apart; later: ["MIXED", "DRAIN"]
		var flags []string
		isList := s.peek() == '['
		raw.state, flags, err = s.stateList()
		if isList {
			raw.flags = flags
			return fState | fFlags, err
		}
		return fState, err
	case "state_flags":
		raw.flags, err = s.strList()
		return fFlags, err
	case "cpus":
		n.CPUs, err = s.count()
		return fCPUs, err
	case "alloc_cpus":
		n.AllocCPUs, err = s.count()
		return fAllocCPUs, err
	case "threads":
		n.Threads, err = s.count()
	case "real_memory":
		n.MemoryMiB, err = s.count64()
		return fMemory, err
	case "alloc_memory":
		n.AllocMiB, err = s.count64()
		return fAllocMem, err
	case "gres":
		raw.gres, err = s.str()
		return fGres, err
	case "gres_used":
		raw.gresUsed, err = s.str()
		return fGresUsed, err
	case "active_features":
		n.Features, err = s.strOrList()
	case "partitions":
		n.Partitions, err = s.strList()
		return fPartitions, err
	case "reason":
		n.Reason, err = s.str()
	default:
		err = s.skip()
	}
	return 0, err
}

// count reads a non-negative integer that fits an int32 (null, or a
// wrapped number not set, reads as 0).
func (s *jsonScanner) count() (int, error) {
	v, err := s.count64()
	if err == nil && v > 1<<31-1 {
		err = fmt.Errorf("%d out of range", v)
	}
	return int(v), err
}

func (s *jsonScanner) count64() (int64, error) {
	v, _, err := s.num()
	if err == nil && v < 0 {
		err = fmt.Errorf("negative value %d", v)
	}
	return v, err
}

// interpret turns the raw state and GRES strings into the node's fields.
func (n *Node) interpret(raw sinfoRaw, memo gresMemo) error {
	st, err := MapState(raw.state, raw.flags)
	if err != nil {
		return fmt.Errorf("field state: %w", err)
	}
	n.State = st
	n.SlurmState = joinState(raw.state, raw.flags)
	if n.AllocCPUs > n.CPUs {
		return fmt.Errorf("field alloc_cpus: %d CPUs allocated of %d", n.AllocCPUs, n.CPUs)
	}
	return n.setGres(memo, raw.gres, raw.gresUsed, "gres", "gres_used")
}

// setGres reads the configured and used GRES strings; the field names are
// for errors. memo may be nil.
func (n *Node) setGres(memo gresMemo, gres, used, gresField, usedField string) error {
	cfg := memo.gpus(gres)
	if cfg.err != nil {
		return fmt.Errorf("field %s: %w", gresField, cfg.err)
	}
	n.GPUs, n.GPUTypes = cfg.use.Count, cfg.use.Types
	if n.GPUs > 0 {
		n.ShardsPerGPU = int(cfg.shards) / n.GPUs
	}
	u := memo.gpus(used)
	if u.err != nil {
		return fmt.Errorf("field %s: %s: %w", usedField, used, u.err)
	}
	n.GPUsUsed, n.GPUUsedIdx, n.UsedIdxKnown = u.use.Count, u.use.Idx, u.use.HasIdx
	if n.GPUsUsed > n.GPUs {
		return fmt.Errorf("field %s: %d GPUs used of %d configured", usedField, n.GPUsUsed, n.GPUs)
	}
	return nil
}

// gresMemo caches parsed GRES strings for one parse: a cluster's nodes
// repeat a handful of them ("gpu:h100:8(S:0-1)", "gpu:h100:0(IDX:N/A)"),
// and parsing each again was a quarter of reading sinfo --json. Cached
// index slices are shared between nodes: read-only.
type gresMemo map[string]gresParsed

type gresParsed struct {
	use    gpuUse
	shards int64 // configured shards (all GPUs)
	err    error
}

func (m gresMemo) gpus(s string) gresParsed {
	if p, ok := m[s]; ok {
		return p
	}
	var p gresParsed
	gs, err := ParseGres(s)
	if err == nil {
		p.use, err = gpuSummary(gs)
	}
	p.err = err
	for _, g := range gs {
		if g.Name == "shard" {
			p.shards += g.Count
		}
	}
	if m != nil {
		m[s] = p
	}
	return p
}
