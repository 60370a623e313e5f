package jobsubmit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// A job's node lists (--nodelist, --exclude, ExcNodeList), read whole and
// bounded.
//
// Whole: a Slurm host list is split at its top-level commas only; a comma
// inside brackets separates numbers ("node[03,16]" is node03 and node16).
// Every list is read by selector/hostlist, never split by hand: split at
// every comma, "node[03,16]" reads as "node[03" and "16]", neither a
// name, and the user's exclusions are lost.
//
// Bounded: the decision and job_modify run inside slurmctld, on the
// thread that holds its locks and behind the one goroutine that answers
// every submission, and a user writes these lists. "n[0-1048574]" is 2^20
// names (seconds of CPU and hundreds of MB to build); a list of a job in
// the cluster file names at most its nodes, so a list that expands to more
// than NodeListBound names is not read at all: a submission passes as
// submitted (Slurm judges the list), an update keeps gangtopo's part
// without reading the user's (modify.go).

// minNodeListBound is NodeListBound's floor, for small clusters.
const minNodeListBound = 64

// NodeListBound is the most names a node list from a job may expand to
// where slurmctld waits: twice the cluster file's nodes (a list naming
// each node once, and again in another spelling), at least
// minNodeListBound. Checked before any name is built, so the cost of a
// longer list is that of reading its text.
func NodeListBound(c *topology.Cluster) int {
	return max(2*len(c.Nodes), minNodeListBound)
}

// expandNodes expands a job's node list, refusing a malformed one and
// passing through (unsupported) one longer than limit.
func expandNodes(flag, expr string, limit int) ([]string, error) {
	if expr == "" {
		return nil, nil
	}
	names, err := hostlist.ExpandAtMost(expr, limit)
	if errors.Is(err, hostlist.ErrTooMany) {
		return nil, &unsupportedError{what: fmt.Sprintf("a %s of more than %d nodes", flag, limit)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, expr, err)
	}
	return names, nil
}

// WithoutNodes takes the nodes of the host list drop out of the host list
// have, both read whole; changed is false when none of them was there (or
// either does not read as a host list). It runs outside slurmctld (gangtopo
// unbind, the controller), bounded by hostlist.MaxHosts.
func WithoutNodes(have, drop string) (string, bool) {
	h, err1 := hostlist.Expand(have)
	d, err2 := hostlist.Expand(drop)
	if err1 != nil || err2 != nil {
		return have, false
	}
	gone := map[string]bool{}
	for _, n := range d {
		gone[n] = true
	}
	var keep []string
	for _, n := range h {
		if !gone[n] {
			keep = append(keep, n)
		}
	}
	if len(keep) == len(h) {
		return have, false
	}
	return hostlist.Compress(keep), true
}

// WithNodes is the union of two host lists (either may be empty), each
// read whole and at most limit names long (an error wrapping
// hostlist.ErrTooMany beyond).
func WithNodes(a, b string, limit int) (string, error) {
	seen := map[string]bool{}
	var all []string
	for _, l := range []string{a, b} {
		if strings.TrimSpace(l) == "" {
			continue
		}
		names, err := hostlist.ExpandAtMost(l, limit)
		if err != nil {
			return "", err
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				all = append(all, n)
			}
		}
	}
	slices.Sort(all)
	return hostlist.Compress(all), nil
}
