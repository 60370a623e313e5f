package topology

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlReader walks a parsed YAML tree and collects errors that name the file,
// line and field path, e.g. `lab.yaml:14: nodes[2].hardware: unknown
// hardware "dgx"`. yaml.v3's own strict mode is not used: it loses
// strictness inside nested decoders and reports Go type names, not the
// field paths a user writes.
type yamlReader struct {
	file string
	errs []error
}

func (r *yamlReader) at(n *yaml.Node) string {
	if n == nil {
		return r.file
	}
	return fmt.Sprintf("%s:%d", r.file, n.Line)
}

func (r *yamlReader) errorf(n *yaml.Node, path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	r.errs = append(r.errs, fmt.Errorf("%s: %s", r.at(n), msg))
}

func (r *yamlReader) err() error { return errors.Join(r.errs...) }

// fields maps each allowed key of a mapping to its handler.
type fields map[string]func(v *yaml.Node, path string)

// mapping checks that n is a mapping whose keys are all allowed and unique,
// and calls each key's handler. required keys that are missing are errors.
func (r *yamlReader) mapping(n *yaml.Node, path string, fs fields, required ...string) {
	if n.Kind != yaml.MappingNode {
		r.errorf(n, path, "want a mapping of keys (%s), got %s", keyList(fs), kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := joinPath(path, k.Value)
		if seen[k.Value] {
			r.errorf(k, sub, "duplicate key")
			continue
		}
		seen[k.Value] = true
		h, ok := fs[k.Value]
		if !ok {
			r.errorf(k, sub, "unknown key %q (allowed here: %s)", k.Value, keyList(fs))
			continue
		}
		h(v, sub)
	}
	for _, k := range required {
		if !seen[k] {
			r.errorf(n, joinPath(path, k), "missing (required)")
		}
	}
}

func keyList(fs fields) string {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// str reads a non-empty string scalar.
func (r *yamlReader) str(n *yaml.Node, path string, dst *string) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || strings.TrimSpace(n.Value) == "" {
		r.errorf(n, path, "want a non-empty string, got %s", kindName(n))
		return
	}
	*dst = n.Value
}

// integer reads an integer scalar within [lo, hi].
func (r *yamlReader) integer(n *yaml.Node, path string, lo, hi int64, dst *int64) {
	if n.Kind != yaml.ScalarNode {
		r.errorf(n, path, "want an integer, got %s", kindName(n))
		return
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
	if err != nil {
		r.errorf(n, path, "want an integer, got %q", n.Value)
		return
	}
	if v < lo || v > hi {
		r.errorf(n, path, "%d is out of range (want %d..%d)", v, lo, hi)
		return
	}
	*dst = v
}

// number reads a finite number scalar; check says what is wrong with its
// value, or "".
func (r *yamlReader) number(n *yaml.Node, path string, check func(float64) string, dst *float64) {
	if n.Kind != yaml.ScalarNode {
		r.errorf(n, path, "want a number, got %s", kindName(n))
		return
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		r.errorf(n, path, "want a number, got %q", n.Value)
		return
	}
	if msg := check(v); msg != "" {
		r.errorf(n, path, "%s", msg)
		return
	}
	*dst = v
}

func (r *yamlReader) intField(n *yaml.Node, path string, lo, hi int64, dst *int) {
	var v int64
	r.integer(n, path, lo, hi, &v)
	*dst = int(v)
}

func (r *yamlReader) boolean(n *yaml.Node, path string, dst *bool) {
	if n.Kind != yaml.ScalarNode {
		r.errorf(n, path, "want true or false, got %s", kindName(n))
		return
	}
	switch n.Value {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		r.errorf(n, path, "want true or false, got %q", n.Value)
	}
}

// sequence calls item for each element of a list.
func (r *yamlReader) sequence(n *yaml.Node, path string, item func(v *yaml.Node, path string)) {
	if n.Kind != yaml.SequenceNode {
		r.errorf(n, path, "want a list, got %s", kindName(n))
		return
	}
	for i, v := range n.Content {
		item(v, fmt.Sprintf("%s[%d]", path, i))
	}
}

func (r *yamlReader) strings(n *yaml.Node, path string, dst *[]string) {
	r.sequence(n, path, func(v *yaml.Node, p string) {
		var s string
		r.str(v, p, &s)
		*dst = append(*dst, s)
	})
}

// ints reads a list of integers; a single scalar means "the same value for
// all count entries" when count > 0.
func (r *yamlReader) ints(n *yaml.Node, path string, lo, hi int64, count int, dst *[]int) {
	if n.Kind == yaml.ScalarNode && count > 0 {
		var v int
		r.intField(n, path, lo, hi, &v)
		for i := 0; i < count; i++ {
			*dst = append(*dst, v)
		}
		return
	}
	r.sequence(n, path, func(v *yaml.Node, p string) {
		var x int
		r.intField(v, p, lo, hi, &x)
		*dst = append(*dst, x)
	})
}
