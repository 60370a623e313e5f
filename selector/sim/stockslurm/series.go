package stockslurm

import (
	"fmt"
	"strings"
)

// Series is a Slurm release series whose stock placement the model was
// checked against: a recording of the reference procedure made on a real
// slurmctld of that series, which the model reproduces (at least 98% of
// the placements, node set and GPU indices). The model is one model: the
// series a report names says which recording backs its `slurm` policy,
// not a different rule set.
type Series struct {
	Name    string // "24.11", what --slurm-series takes
	Release string // the release recorded, "24.11.5"
	// Recording is where the recorded runs live, from the repository
	// root; Test the test that replays them.
	Recording, Test string
}

// checkedSeries are the series in release order. TestReference replays
// 22.05.8's recording (the shared reference data, every run of it);
// TestReferenceSeries every recording under testdata/slurm-<release>/
// (make record-reference: Reference 1, plain and pernode, topology/tree)
// and fails when this list and those directories disagree.
var checkedSeries = []Series{
	{"22.05", "22.05.8", "../shared/data/slurm-22.05-reference", "TestReference"},
	{"24.11", "24.11.5", "selector/sim/stockslurm/testdata/slurm-24.11.5", "TestReferenceSeries"},
	{"26.05", "26.05.5", "selector/sim/stockslurm/testdata/slurm-26.05.5", "TestReferenceSeries"},
}

// DefaultSeries is the series reports name when none is asked for: the
// one the model was first written and checked against.
const DefaultSeries = "22.05"

// CheckedSeries returns the series the model was checked against, oldest
// first.
func CheckedSeries() []Series { return append([]Series(nil), checkedSeries...) }

// SeriesNames lists the series' names: "22.05, 24.11, 26.05".
func SeriesNames() string {
	names := make([]string, len(checkedSeries))
	for i, s := range checkedSeries {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// LookupSeries finds a series by name ("24.11"); a release of it
// ("24.11.5") is not a series name and is refused with the same message,
// which lists what the model was checked against.
func LookupSeries(name string) (Series, error) {
	for _, s := range checkedSeries {
		if s.Name == name {
			return s, nil
		}
	}
	return Series{}, fmt.Errorf("unknown Slurm series %q: the slurm model was checked against %s (want one of those)", name, SeriesNames())
}

// Describe is the line a report prints for the slurm policy on this
// series.
func (s Series) Describe() string {
	return fmt.Sprintf("slurm models stock Slurm %s (cons_tres, topology/tree): checked against the placements recorded on Slurm %s, %s (%s)",
		s.Name, s.Release, s.Recording, s.Test)
}
