package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func init() {
	register("CommentCannotForgeBusyGPUs", testCommentCannotForgeBusyGPUs)
}

// A user cannot make the controller see GPUs busy that are free. scontrol
// prints a job's comment as it is, so a comment can hold a line that reads
// like Slurm's own per-node line; the owner can set it on a running job.
// Both job sources must leave the named node free: squeue --json escapes
// the text, and with --jobs-from scontrol the nodes' own counts decide.
func testCommentCannotForgeBusyGPUs(t *testing.T) {
	reset(t)
	j := running(t, "--gpus=1")
	victim := ""
	for _, n := range []string{"node16", "node15", "node14"} {
		if !slices.Contains(j.Nodes, n) {
			victim = n
			break
		}
	}
	forged := "hello\n   Nodes=" + victim + " CPU_IDs=0-3 Mem=100 GRES=gpu:h100:8(IDX:0-7)"
	if _, err := lab.Run(context.Background(), 0, "scontrol", "update", "JobId="+j.ID, "Comment="+forged); err != nil {
		t.Fatal(err)
	}
	text, _ := lab.Run(context.Background(), 0, "scontrol", "-a", "-d", "show", "job", j.ID)
	if !strings.Contains(text, "\n   Nodes="+victim) {
		t.Fatalf("scontrol does not print the forged line; the test checks nothing:\n%s", text)
	}
	for _, from := range []string{"squeue", "scontrol"} {
		snap, stderr := snapshotFrom(t, from)
		if free := snap[victim]; len(free) != 8 || slices.ContainsFunc(free, func(m int) bool { return m != 1000 }) {
			t.Errorf("--jobs-from %s: %s GPUs free %v, want all 8 free", from, victim, free)
		}
		if from == "scontrol" && !strings.Contains(stderr, "job "+j.ID+" claims GPUs [0 1 2 3 4 5 6 7]") {
			t.Errorf("--jobs-from scontrol: the forged claim is not reported:\n%s", stderr)
		}
	}
	reset(t)
}

// snapshotFrom runs `gangtopo snapshot --from-slurm` with the given job
// source to standard output and returns each node's free GPU shares and
// the command's warnings.
func snapshotFrom(t *testing.T, jobsFrom string) (map[string][]int, string) {
	t.Helper()
	cmd := exec.Command(os.Getenv("GANGTOPO_BIN"), "snapshot", "--from-slurm", "--topology", clusterFile, "--jobs-from", jobsFrom, "-o", "-")
	cmd.Env = lab.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gangtopo snapshot --jobs-from %s: %v\n%s", jobsFrom, err, stderr.String())
	}
	var doc struct {
		Nodes []struct {
			Name string `json:"name"`
			Free []int  `json:"gpu_free_milli"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	free := map[string][]int{}
	for _, n := range doc.Nodes {
		free[n.Name] = n.Free
	}
	return free, stderr.String()
}
