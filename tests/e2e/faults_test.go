package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func init() {
	register("FaultsLeaveJobsUntouched", testFaultsLeaveJobsUntouched)
	register("EngineFaultsInTestBuild", testEngineFaultsInTestBuild)
}

// testFaultsLeaveJobsUntouched: whatever goes wrong inside gangtopo, a job
// is accepted exactly as submitted (on_failure: open), slurmctld logs one
// line and keeps running (same PID), and the next job is placed as usual
// once the fault is gone.
func testFaultsLeaveJobsUntouched(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T)
		log   string // in slurmctld's log line for the job (a regular expression)
	}{
		{"snapshot missing", func(t *testing.T) { must(t, os.Remove(snapshotFile)) },
			regexp.QuoteMeta("snapshot " + snapshotFile + ": no such file or directory")},
		{"snapshot corrupt", func(t *testing.T) { must(t, os.WriteFile(snapshotFile, []byte(`{"version":"v1","nodes":[{`), 0o644)) },
			"unexpected EOF"},
		{"snapshot stale", func(t *testing.T) { backdate(t, snapshotFile, 2*time.Minute) },
			// its age is read at the submission, a second or so after the backdating
			`is stale: taken 2m[0-9]+s ago, bound 30s`},
		{"snapshot writable by others", func(t *testing.T) { must(t, os.Chmod(snapshotFile, 0o666)) },
			regexp.QuoteMeta("is writable by group or others (mode 0666): refused")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reset(t)
			tc.spoil(t)
			time.Sleep(reloadWait)
			untouchedThenPlaced(t, "gangtopo-fault", tc.log)
		})
	}
}

// testEngineFaultsInTestBuild loads the libgangtopo built with fault hooks
// (make plugins-fault): a job named gangtopo-inject-panic panics inside
// the engine call, gangtopo-inject-stall outlives the 200 ms deadline (Go
// answers at the deadline), gangtopo-inject-hang stalls Go for a second
// (the C shim stops waiting after 200+50 ms, and the next job's call
// discards the late answer).
func testEngineFaultsInTestBuild(t *testing.T) {
	dir := os.Getenv("GANGTOPO_FAULT_PLUGINS")
	if dir == "" {
		t.Fatal("GANGTOPO_FAULT_PLUGINS is not set: run `make e2e`")
	}
	if err := lab.Restart(context.Background(), gangtopoPlugins(dir)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := lab.Restart(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))); err != nil {
			t.Fatal(err)
		}
	}()
	for _, tc := range []struct{ job, log, later string }{
		{"gangtopo-inject-panic", "placement engine panicked: injected fault: engine panic", ""},
		{"gangtopo-inject-stall", "placement took longer than the 200ms deadline", ""},
		{"gangtopo-inject-hang", "no answer within 250ms (deadline 200ms + 50ms)",
			`came after its deadline and was not applied: job "gangtopo-inject-hang"`},
	} {
		t.Run(tc.job, func(t *testing.T) {
			reset(t)
			offset := ctldLogSize()
			untouchedThenPlaced(t, tc.job, regexp.QuoteMeta(tc.log))
			if logged := ctldLogSince(offset); !strings.Contains(logged, tc.later) {
				t.Errorf("slurmctld log after the next job:\n%s\nwant %q", logged, tc.later)
			}
		})
	}
	// The shim follows on_failure itself when Go does not answer, with the
	// on_failure of the configuration in force (republished on a reload).
	t.Run("gangtopo-inject-hang with on_failure closed", func(t *testing.T) {
		reset(t)
		writeConfig(t, strings.Replace(labConfig, "on_failure: open", "on_failure: closed", 1))
		defer writeConfig(t, labConfig)
		pid := lab.CtldPID
		_, err := trySubmit(nil, "-J", "gangtopo-inject-hang", "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
		want := "gangtopo: placement is unavailable (no answer within 250ms (deadline 200ms + 50ms)); on_failure is closed"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sbatch: %v; want it refused with %q", err, want)
		}
		if !lab.CtldAlive() || lab.CtldPID != pid {
			t.Fatalf("slurmctld did not survive: alive %v, pid %d -> %d", lab.CtldAlive(), pid, lab.CtldPID)
		}
	})
	// Three submissions in a row without an answer open the shim's
	// breaker: logged once, and the next jobs are decided without asking
	// (no further "no answer within" wait). The lab restarts after this
	// test, which resets the breaker.
	t.Run("breaker after three hangs", func(t *testing.T) {
		reset(t)
		offset := ctldLogSize()
		for i := 0; i < 5; i++ {
			if _, err := trySubmit(nil, "-J", "gangtopo-inject-hang", "--gpus=8", "--cpus-per-gpu=1"); err != nil {
				t.Fatalf("job %d: %v (on_failure open: it must be accepted)", i, err)
			}
		}
		logged := ctldLogSince(offset)
		if n := strings.Count(logged, "no answer from libgangtopo for 3 submissions in a row"); n != 1 {
			t.Errorf("breaker opened %d times in the log, want once:\n%s", n, logged)
		}
		// (the hang of the test before may count as the first miss; the
		// third miss's own line follows the breaker's)
		_, after, _ := strings.Cut(logged, "submissions in a row")
		if n := strings.Count(after, "no answer within 250ms"); n != 1 {
			t.Errorf("%d waits for an answer after the breaker opened, want only the third miss's line:\n%s", n, logged)
		}
	})
}

// writeConfig replaces the plugin's gangtopo.yaml (labConfig's form) and
// waits for the plugin to reload it.
func writeConfig(t *testing.T, form string) {
	t.Helper()
	must(t, os.WriteFile(configFile+".tmp", []byte(fmt.Sprintf(form, clusterFile, snapshotFile)), 0o644))
	must(t, os.Rename(configFile+".tmp", configFile))
	time.Sleep(reloadWait)
}

// untouchedThenPlaced submits a 32-GPU leaf gang named `name` while a fault
// is active and checks it is untouched (slurmctld's log matching log, a
// regular expression), then repairs the snapshot and
// checks the next gang is placed in one leaf, with slurmctld alive under
// the same PID throughout.
func untouchedThenPlaced(t *testing.T, name, log string) {
	t.Helper()
	re := regexp.MustCompile(log)
	pid := lab.CtldPID
	offset := ctldLogSize()
	id := submit(t, "-J", name, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	j := settle(t, id)
	if j.AdminComment != "" || j.Features != "" || !strings.Contains(j.TresPerJob, "gpu:32") || j.NumNodes == 4 && j.TresPerNode != "" {
		t.Errorf("job %s was changed: AdminComment %q Features %q TresPerJob %q TresPerNode %q", id, j.AdminComment, j.Features, j.TresPerJob, j.TresPerNode)
	}
	logged := ctldLogSince(offset)
	if !re.MatchString(logged) || !strings.Contains(logged, "gangtopo v1 untouched") {
		t.Errorf("slurmctld log after the fault:\n%s\nwant an untouched line with %q", logged, log)
	}
	if !lab.CtldAlive() || lab.CtldPID != pid {
		t.Fatalf("slurmctld did not survive: alive %v, pid %d -> %d", lab.CtldAlive(), pid, lab.CtldPID)
	}
	reset(t) // cancels the untouched job, writes a good snapshot
	next := running(t, "--gpus=32", "--cpus-per-gpu=1", "--gang-topology=leaf")
	if len(leavesOf(t, next)) != 1 || !strings.HasPrefix(next.AdminComment, "gangtopo v1 placed") {
		t.Errorf("next gang after the fault: %v, decision %q", next.Nodes, next.AdminComment)
	}
}

// backdate rewrites a snapshot's time to `age` ago (a daemon that stopped
// publishing that long ago), keeping everything else.
func backdate(t *testing.T, path string, age time.Duration) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var doc map[string]json.RawMessage
	must(t, json.Unmarshal(data, &doc))
	stamp, err := json.Marshal(time.Now().Add(-age).UTC())
	must(t, err)
	doc["time"] = stamp
	out, err := json.Marshal(doc)
	must(t, err)
	must(t, os.WriteFile(path+".tmp", out, 0o644))
	must(t, os.Rename(path+".tmp", path))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
