package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
)

// fields is one scontrol record: Key=Value pairs in order.
type fields struct {
	keys []string
	vals map[string]string
}

func newFields() *fields { return &fields{vals: map[string]string{}} }

func (f *fields) set(k, v string) error {
	if _, dup := f.vals[k]; dup {
		return fmt.Errorf("field %s appears twice", k)
	}
	f.keys = append(f.keys, k)
	f.vals[k] = v
	return nil
}

func (f *fields) has(k string) bool {
	_, ok := f.vals[k]
	return ok
}

// need returns a field that must be present.
func (f *fields) need(k string) (string, error) {
	v, ok := f.vals[k]
	if !ok {
		return "", fmt.Errorf("field %s: missing", k)
	}
	return v, nil
}

// needInt returns a field that must be a non-negative integer.
func (f *fields) needInt(k string) (int64, error) {
	v, err := f.need(k)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<31-1 {
		return 0, fmt.Errorf("field %s: want a non-negative integer, found %q", k, v)
	}
	return n, nil
}

// needInts returns several integer fields.
func (f *fields) needInts(keys ...string) ([]int64, error) {
	out := make([]int64, len(keys))
	for i, k := range keys {
		v, err := f.needInt(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// isKey reports whether tok starts a Key=Value pair. scontrol's keys are
// words that may contain '_', '/', ':' and '.' ("CPUs/Task",
// "ReqB:S:C:T", "AllocNode:Sid").
func isKey(tok string) (key, val string, ok bool) {
	k, v, found := strings.Cut(tok, "=")
	if !found || k == "" || !isLetter(k[0]) {
		return "", "", false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '/' && c != ':' && c != '.' {
			return "", "", false
		}
	}
	return k, v, true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// splitPairs reads space-separated Key=Value pairs. A word that does not
// start a pair continues the previous value (OS=Linux 6.1 #1 SMP). Once a
// key in tail is read, the rest of the text is free text that only another
// tail key can interrupt (Reason=..., Comment=..., Extra=... may contain
// anything).
func splitPairs(text string, tail map[string]bool, into *fields) error {
	var key string
	var val strings.Builder
	inTail := false
	flush := func() error {
		if key == "" {
			return nil
		}
		return into.set(key, val.String())
	}
	for _, tok := range strings.Fields(text) {
		k, v, ok := isKey(tok)
		if ok && (!inTail || tail[k]) {
			if err := flush(); err != nil {
				return err
			}
			key, inTail = k, tail[k]
			val.Reset()
			val.WriteString(v)
			continue
		}
		if key == "" {
			return fmt.Errorf("text %q before the first Key=Value", tok)
		}
		val.WriteByte(' ')
		val.WriteString(tok)
	}
	return flush()
}

// countIDs counts the entries of a bit_fmt list ("0-3,8" is 5).
func countIDs(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n := 0
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("bad ID %q in %q", r, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("bad range %q in %q", r, s)
			}
		}
		n += b - a + 1
	}
	return n, nil
}
