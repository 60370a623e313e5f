package ctld

import (
	"strings"
	"testing"
)

// The parsers of what reaches slurmctld from outside: gangtopo.yaml, the
// TRES strings of a job, and decision lines read back by gangtopo why.
// None may panic; a decision that parses must render back to itself.

func FuzzParseConfig(f *testing.F) {
	f.Add("version: v1\ntopology: /t\nsnapshot: /s\njobs: gpu\ndeadline: 20ms\n")
	f.Add("version: v1\npartitions: [a, b]\ntrusted_uids: [1, x]\n")
	f.Add("- [\n")
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = ParseConfig(strings.NewReader(in), "fuzz.yaml")
	})
}
