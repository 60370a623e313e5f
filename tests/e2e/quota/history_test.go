package quota

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gangtopo/gangtopo/tests/slurmlab"
)

// historyJobs is the workload of the timing check in make test: small
// enough to run in about three minutes here (the 500-job run is make
// bench-history's).
const historyJobs = 100

// TestHistoryTimingCheck is the queue model against what really happened:
// a workload of sleep jobs (mixed sizes, a backlog, cancellations, four
// accounts; slurmlab.NewHistory) through this lab's real slurmctld, with
// slurmdbd over MariaDB recording it; the dump (sacct --json and sacct
// -P, scontrol show config) replayed by `gangtopo replay --sacct
// --check-starts` under the slurm model, each job's predicted start
// against the recorded one. At least 90% must start within max(60 s, 5%
// of their wait); both dumps must give the same jobs.
func TestHistoryTimingCheck(t *testing.T) {
	ctx := context.Background()
	if err := lab.CancelAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// the tests after it compare Slurm's accounts with those before any sync
		if err := lab.RemoveHistoryAccounts(context.Background()); err != nil {
			t.Errorf("removing the history's accounts: %v", err)
		}
	})
	t0 := time.Now()
	jobs := slurmlab.NewHistory(historyJobs, 23, lab.Cluster.NumGPUs())
	start, err := lab.RunHistory(ctx, jobs, slurmlab.HistoryOptions{Limit: 15 * time.Minute, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := lab.DumpHistory(ctx, start, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s ran in %v", slurmlab.HistorySummary(jobs, false), time.Since(t0).Round(time.Second))
	var replayed []string
	for _, dump := range []string{"sacct.json", "sacct.txt"} {
		out := replayHistory(t, filepath.Join(dir, dump), filepath.Join(dir, "config.txt"))
		t.Logf("gangtopo replay --sacct %s --check-starts:\n%s", dump, out)
		m := regexp.MustCompile(`target: at least 90% on time: ([0-9.]+)% \((\d+) of (\d+)\): (met|MISSED)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no verdict in the check's output", dump)
		}
		if m[4] != "met" {
			t.Errorf("%s: %s%% of the jobs started on time (want at least 90%%)", dump, m[1])
		}
		if n, _ := strconv.Atoi(m[3]); n < historyJobs/2 {
			t.Errorf("%s: only %d jobs compared of %d submitted", dump, n, historyJobs)
		}
		replayed = append(replayed, regexp.MustCompile(`\d+ jobs eligible`).FindString(out))
	}
	if replayed[0] != replayed[1] {
		t.Errorf("the JSON and -P dumps replay different jobs: %q vs %q", replayed[0], replayed[1])
	}
}

func replayHistory(t *testing.T, dump, config string) string {
	t.Helper()
	cmd := exec.Command(os.Getenv("GANGTOPO_BIN"), "replay", "--sacct", dump, "--topology", clusterFile,
		"--scontrol-config", config, "--check-starts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gangtopo replay --sacct %s: %v\n%s", dump, err, out)
	}
	return string(out)
}
