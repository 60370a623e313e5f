package topobuild

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// ParseTopologyConf reads a Slurm topology.conf for topology/tree:
// `SwitchName=NAME Nodes=HOSTLIST` for leaves, `SwitchName=NAME
// Switches=HOSTLIST` above them, optional LinkSpeed=. Keys are case
// insensitive, # starts a comment, a trailing backslash continues a line,
// as in Slurm. Block plugin lines (BlockName=) are refused: gangtopo takes
// blocks from the GPUs' NVLink fabric, not from this file.
func ParseTopologyConf(r io.Reader, name string) (*SwitchTree, error) {
	t := &SwitchTree{Source: name}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lineNo, start := 0, 0
	var logical strings.Builder
	for sc.Scan() {
		lineNo++
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if logical.Len() == 0 {
			start = lineNo
		}
		if strings.HasSuffix(text, "\\") {
			logical.WriteString(strings.TrimSuffix(text, "\\") + " ")
			continue
		}
		logical.WriteString(text)
		line := strings.TrimSpace(logical.String())
		logical.Reset()
		if line == "" {
			continue
		}
		s, err := parseSwitchLine(line, fmt.Sprintf("%s:%d", name, start))
		if err != nil {
			return nil, err
		}
		t.Switches = append(t.Switches, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

func parseSwitchLine(line, at string) (Switch, error) {
	s := Switch{At: at}
	seen := map[string]bool{}
	for i, field := range strings.Fields(line) {
		k, v, ok := strings.Cut(field, "=")
		key := strings.ToLower(k)
		if !ok || v == "" {
			return s, fmt.Errorf("%s: %q is not KEY=VALUE", at, field)
		}
		if i == 0 && key != "switchname" {
			if key == "blockname" || key == "blocksizes" {
				return s, fmt.Errorf("%s: %s= is a topology/block line; gangtopo reads the tree (SwitchName= lines) and takes blocks from the NVLink fabric the node maps report", at, k)
			}
			return s, fmt.Errorf("%s: a line must start with SwitchName=, got %s=", at, k)
		}
		if seen[key] {
			return s, fmt.Errorf("%s: %s= given twice", at, k)
		}
		seen[key] = true
		var err error
		switch key {
		case "switchname":
			s.Name = v
		case "nodes":
			s.Nodes, err = hostlist.Expand(v)
		case "switches":
			s.Children, err = hostlist.Expand(v)
		case "linkspeed":
		default:
			return s, fmt.Errorf("%s: unknown key %s= (allowed: SwitchName, Switches, Nodes, LinkSpeed)", at, k)
		}
		if err != nil {
			return s, fmt.Errorf("%s: %s=: %w", at, k, err)
		}
	}
	if len(s.Nodes) > 0 && len(s.Children) > 0 {
		return s, fmt.Errorf("%s: switch %s has both Nodes= and Switches= (Slurm refuses that too)", at, s.Name)
	}
	if len(s.Nodes) == 0 && len(s.Children) == 0 {
		return s, fmt.Errorf("%s: switch %s has neither Nodes= nor Switches=", at, s.Name)
	}
	return s, nil
}
