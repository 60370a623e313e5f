package e2e

import (
	"runtime"
	"strings"
	"testing"
)

func init() {
	register("GoRuntimeLimitedInSlurmctld", testGoRuntimeLimitedInSlurmctld)
}

// testGoRuntimeLimitedInSlurmctld: with the default go_max_procs: 1, the
// plugin sets the Go runtime inside slurmctld to one P when it loads and
// says so in slurmctld's log (on a one-CPU machine there is nothing to
// change and nothing is logged).
func testGoRuntimeLimitedInSlurmctld(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: GOMAXPROCS is 1 already")
	}
	want := "job_submit/gangtopo: GOMAXPROCS 1 (go_max_procs; it was "
	if logged := ctldLogSince(0); !strings.Contains(logged, want) {
		t.Errorf("slurmctld log has no line %q; its tail:\n%s", want, lab.LogTail("slurmctld.log", 30))
	}
}
