package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// The --json layouts of the Slurm series gangtopo reads. Slurm 22.05's
// clients print openapi/v0.0.38 (meta.plugin.type); from 23.02 on they
// print their data_parser's layout (meta.plugin.data_parser:
// data_parser/v0.0.42 in 24.11, v0.0.45 in 26.05), which differs in what
// the snapshot reads:
//
//   - numbers that may be unset or infinite are wrapped:
//     {"set": true, "infinite": false, "number": 16} (node counts, CPUs,
//     priorities, times, array and het-job fields); set false or infinite
//     reads as 0, as a 22.05 null does;
//   - states are lists, base first: job_state ["RUNNING"], a node's state
//     ["IDLE", "DRAIN"]; active_features is a list too;
//   - a job's job_resources.nodes is an object: list (the host list) and
//     allocation[] (name, memory.allocated, sockets[].cores[].status);
//   - sinfo --json lists groups of nodes with the same state, counts
//     summed, not nodes: the nodes come from `scontrol --json show nodes`
//     (ScontrolNodesJSON), which 22.05 does not have.
//
// One reader takes both layouts: where a field's form differs, the
// helpers below accept either, so a layout is never half-read as the
// other. The layouts gangtopo was checked against are captured from each
// series' lab in testdata/slurm-*.

// layout is which of the two --json layouts a document uses.
type layout uint8

const (
	layoutOpenAPI38  layout = iota // Slurm 22.05
	layoutDataParser               // 23.02 and later
)

// openAPI38 is Slurm 22.05's meta.plugin.type.
const openAPI38 = "openapi/v0.0.38"

// dataParsers are the data_parser versions read (23.02: v0.0.39 through
// 26.05: v0.0.45); captures of v0.0.42 (24.11.5) and v0.0.45 (26.05.5) are
// tested.
var dataParsers = map[string]bool{
	"data_parser/v0.0.39": true, "data_parser/v0.0.40": true, "data_parser/v0.0.41": true,
	"data_parser/v0.0.42": true, "data_parser/v0.0.43": true, "data_parser/v0.0.44": true,
	"data_parser/v0.0.45": true,
}

// docMeta is what a document's meta says.
type docMeta struct {
	layout  layout
	release string // "24.11.5"
	parser  string // as printed, for messages
}

// meta reads meta: the layout (from plugin.type or plugin.data_parser)
// and the release (Slurm.release in 22.05, slurm.release later).
func (s *jsonScanner) meta() (docMeta, error) {
	var m docMeta
	var plugin, parser string
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "plugin":
			return s.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "type":
					plugin, err = s.looseStr()
				case "data_parser":
					parser, err = s.looseStr()
				default:
					err = s.skip()
				}
				return err
			})
		case "Slurm", "slurm":
			return s.object(func(k []byte) error {
				if string(k) == "release" {
					v, err := s.str()
					m.release = v
					return err
				}
				return s.skip()
			})
		default:
			return s.skip()
		}
	})
	if err != nil {
		return m, fmt.Errorf("meta: %w", err)
	}
	switch {
	case plugin == openAPI38:
		m.layout, m.parser = layoutOpenAPI38, plugin
	case dataParsers[parser]:
		m.layout, m.parser = layoutDataParser, parser
	default:
		return m, fmt.Errorf("meta: Slurm %s prints plugin.type %q, data_parser %q; this gangtopo reads %s (Slurm 22.05) and data_parser/v0.0.39 to v0.0.45 (23.02 to 26.05)",
			orUnknown(m.release), plugin, parser, openAPI38)
	}
	return m, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(release not given)"
	}
	return s
}

// num reads a count: an integer, null, or a wrapped number (set false or
// infinite: 0). set says a value was given.
func (s *jsonScanner) num() (v int64, set bool, err error) {
	if s.peek() != '{' {
		return s.int()
	}
	var isSet, inf bool
	err = s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "set":
			isSet, err = s.boolean()
		case "infinite":
			inf, err = s.boolean()
		case "number":
			if s.peek() == '-' || s.peek() >= '0' && s.peek() <= '9' {
				v, _, err = s.intOrFloat()
			} else {
				err = s.errorf("want a number, found %s", s.describeNext())
			}
		default:
			err = s.skip()
		}
		return err
	})
	if err != nil || !isSet || inf {
		return 0, false, err
	}
	return v, true, nil
}

// intOrFloat reads a number, truncating a fraction (billable_tres is a
// float; nothing gangtopo reads is).
func (s *jsonScanner) intOrFloat() (int64, bool, error) {
	start := s.pos
	if err := s.number(); err != nil {
		return 0, false, err
	}
	raw := string(s.data[start:s.pos])
	if v, err := strconv.ParseInt(raw, 10, 64); err == nil {
		return v, true, nil
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || f > 1<<62 || f < -(1<<62) {
		s.pos = start
		return 0, false, s.errorf("want a number, found %s", raw)
	}
	return int64(f), true, nil
}

// strOrList reads a string (22.05) or a list of strings (later): a
// comma-separated string is split.
func (s *jsonScanner) strOrList() ([]string, error) {
	if s.peek() == '[' {
		return s.strList()
	}
	v, err := s.str()
	return splitList(v), err
}

// stateList reads a state as a string ("RUNNING") or a list, base first
// (["IDLE", "DRAIN"]): the base and the flags.
func (s *jsonScanner) stateList() (base string, flags []string, err error) {
	if s.peek() != '[' {
		base, err = s.str()
		return base, nil, err
	}
	list, err := s.strList()
	if err != nil {
		return "", nil, err
	}
	if len(list) == 0 {
		return "", nil, s.errorf("empty state list")
	}
	return list[0], list[1:], nil
}

// groupedSinfoError is sinfo --json of 23.02 and later: groups of nodes,
// not nodes.
type groupedSinfoError struct{ meta docMeta }

func (e *groupedSinfoError) Error() string {
	return fmt.Sprintf("Slurm %s's sinfo --json (%s) lists groups of nodes with their counts summed, not each node's GPUs in use: "+
		"read nodes with `scontrol --json show nodes` (--nodes-from scontrol-json, or auto, the default, which does so by itself)",
		orUnknown(e.meta.release), e.meta.parser)
}

// joinState is a state as scontrol prints it: "MIXED+DRAIN".
func joinState(base string, flags []string) string {
	return strings.Join(append([]string{base}, flags...), "+")
}
