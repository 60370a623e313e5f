package e2e

import (
	"strings"
	"testing"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
)

func init() {
	register("UpdatesCannotStallSubmissions", testUpdatesCannotStallSubmissions)
}

// testUpdatesCannotStallSubmissions: a user sends `scontrol update
// ExcNodeList=n[0-1048574]` (2^20 names) for another user's job and for
// their own, four times over (more than the breaker's three misses), both
// jobs bound with exclusions of gangtopo's that an update keeps.
// Slurm 22.05 hands the first to job_modify before it finds the caller may
// not update the job (24.11 and 26.05 refuse it first); both reach the
// plugin as the owner's. Each submission right after gets gangtopo's
// decision, within its deadline: the update of another user's job is not
// read, the owner's list is not expanded, and no update counts towards
// the breaker.
func testUpdatesCannotStallSubmissions(t *testing.T) {
	// bind_nodes: 0: a job in a hole excludes the whole free nodes, which
	// its binding records; an ExcNodeList update is then merged with them
	writeConfig(t, labConfig+"bind_nodes: 0\n")
	defer writeConfig(t, labConfig)
	reset(t)
	defer cancelUser(t, nobody)
	fill(t, map[string]int{"node02": 6, "node03": 6})             // a hole for each job
	theirs := submit(t, "--hold", "--gpus=2", "--cpus-per-gpu=1") // root's
	out, err := lab.RunAs(ctxT(t), nobody, nobody, "sbatch", "--parsable", "-o", "/dev/null", "--hold", "--gpus=2", "--wrap", "sleep 1000")
	must(t, err)
	own := strings.TrimSpace(out)
	for _, id := range []string{theirs, own} {
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if d, err := jobsubmit.ParseDecision(j.AdminComment); err != nil || d.Excluded == "" {
			t.Fatalf("job %s: decision %q (%v): no exclusions of gangtopo's for an update to keep", id, j.AdminComment, err)
		}
	}
	publish(t) // the snapshot lists both bindings, with their owners

	offset := ctldLogSize()
	for round := 0; round < 4; round++ {
		for _, id := range []string{theirs, own} {
			// Slurm refuses both (not the owner; no such nodes): what
			// matters is what they cost gangtopo before that
			_, _ = lab.RunAs(ctxT(t), nobody, nobody, "scontrol", "update", "JobId="+id, "ExcNodeList=n[0-1048574]")
			j, err := lab.ShowJob(ctxT(t), submit(t, "--hold", "--gpus=1", "--cpus-per-gpu=1"))
			must(t, err)
			if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed") {
				t.Errorf("round %d, after an update of job %s: submission %s got %q, want gangtopo's placement", round, id, j.ID, j.AdminComment)
			}
		}
	}
	logged := ctldLogSince(offset)
	for _, bad := range []string{"no answer within", "came after its deadline", "no answer from libgangtopo for", "passes as given: no answer"} {
		if strings.Contains(logged, bad) {
			t.Errorf("slurmctld logged %q after the updates:\n%s", bad, logged)
		}
	}
	if j, _ := lab.ShowJob(ctxT(t), theirs); j == nil || strings.Contains(j.ExcNodes, "n[0-1048574]") {
		t.Errorf("another user's update of job %s was carried out", theirs)
	}
}
