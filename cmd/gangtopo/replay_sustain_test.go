package main

import (
	"strings"
	"testing"
)

// TestSustainSmoke is the --sustain search on the real trace, short: the
// busiest fortnight (as TestReplayOrderings), four teams of whole nodes,
// the central band, bisection to 0.25. Each search must find a load that
// sustains and one that does not, and gangtopo with dynamic quotas must
// sustain at least what static partitions do (make bench-headline runs
// the whole trace at every band).
func TestSustainSmoke(t *testing.T) {
	o := busiestFortnight(t)
	o.policies, o.slowdown = "static,gangtopo-slurm+quota", "grounded:central"
	o.quota, o.sustain, o.sustainFrom, o.sustainTol = "accounts=4,shares=nodes", true, 1, 0.25
	set, err := o.setup()
	if err != nil {
		t.Fatal(err)
	}
	searches, err := sustainSearches(set, o.sustainFrom, o.sustainTol)
	if err != nil {
		t.Fatal(err)
	}
	rep := &sustainReport{set: set, searches: searches}
	var out strings.Builder
	rep.write(&out, false)
	t.Log("\n" + out.String())
	for p, name := range set.policies {
		ss := rep.search(0, p)
		if ss.best == nil || rep.bounded(0, p) {
			t.Errorf("%s: the search found %s, want a load that sustains and one that does not", name, ss.bound())
		}
		for _, tr := range ss.tries {
			if tr.ok != sustains(&tr.s) || tr.ok && tr.s.MeanWait > sustainMeanWait {
				t.Errorf("%s at %g: verdict %v for mean wait %.0f s, 16+ %.0f s", name, tr.load, tr.ok, tr.s.MeanWait, tr.s.Wait16)
			}
		}
	}
	if st, g := rep.load(0, 0), rep.load(0, 1); !(g >= st) {
		t.Errorf("gangtopo-slurm+quota sustains %g, below static partitions' %g", g, st)
	}
}
