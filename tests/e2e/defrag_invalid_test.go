package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	register("DefragBadInput", testDefragBadInput)
}

// testDefragBadInput gathers what `gangtopo defrag apply` refuses as bad
// input: a clear message, exit status 2, nothing requeued and no hold.
func testDefragBadInput(t *testing.T) {
	reset(t)
	cfg := defragConfig(t)
	jobs := fragmented(t)
	gang := pendingGang(t)
	// a gang that can never fit: every leaf loses a node to its exclusions
	never := pendingGang(t)
	_, err := lab.Run(ctxT(t), 0, "scontrol", "update", "JobId="+never, "ExcNodeList=node01,node05,node09,node13")
	must(t, err)
	foreign := filepath.Join(filepath.Dir(snapshotFile), "foreign-plan.json")
	must(t, os.WriteFile(foreign, []byte(`{"version":"v1","cluster":"elsewhere","cluster_hash":"0123456789abcdef","made":"2026-12-01T00:00:00Z",
 "gang":"`+gang+`","gang_gpus":32,"request":"32 GPUs, leaf:required","domain":"leaf2","gang_nodes":"node[05-08]",
 "evict":[{"job":"`+jobs["b"]+`","nodes":"node06","gpus":1}],"cost":0.1,"lost_gpu_hours":0.1}`), 0o644))
	base := []string{"--config", cfg, "--topology", clusterFile, "--yes"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown job", []string{"--job", "999999"}, "job 999999: Slurm knows no such job"},
		{"running job", []string{"--job", jobs["a1"]}, "job " + jobs["a1"] + " is RUNNING: defrag apply makes room for a pending gang"},
		{"gang that can never fit", []string{"--job", never}, "can never fit: no leaf of lab16 it may use holds it even with every job gone"},
		{"plan from another cluster", []string{"--plan", foreign}, "the plan was made on cluster elsewhere"},
		{"job and plan together", []string{"--job", gang, "--plan", foreign}, "--job and --plan together"},
		{"no gang", nil, "say which gang: --job ID, or --plan FILE"},
		// defragConfig's hold is 3 min: the wait must end 30 s before it
		{"a wait past the hold", []string{"--job", gang, "--wait", "3m"}, "--wait 3m0s: longer than defrag.hold (3m0s) minus 30s, so the hold would run out first: give at most 2m30s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := defragCmd(t, append(append([]string{"defrag", "apply"}, c.args...), base...)...)
			if code != 2 || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", code, c.want, out)
			}
		})
	}
	for name, id := range jobs {
		if r := restarts(t, id); r != "0" {
			t.Errorf("job %s (%s) has %s restarts after bad input, want 0", name, id, r)
		}
	}
	if holds := gangtopoHolds(t); len(holds) != 0 {
		t.Errorf("holds after bad input: %v", holds)
	}
}
