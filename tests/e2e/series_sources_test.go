package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func init() {
	register("EverySourceGivesOneSnapshot", testEverySourceGivesOneSnapshot)
}

// nodeSourcesOf lists the node sources a release offers: sinfo --json
// lists each node only in 22.05; from 23.02 on it lists groups of nodes and
// scontrol --json show nodes lists them (slurmstate/slurmjson.go). The text
// form and auto work on every series.
func nodeSourcesOf(release string) []string {
	if strings.HasPrefix(release, "22.") {
		return []string{"auto", "sinfo", "scontrol"}
	}
	return []string{"auto", "scontrol-json", "scontrol"}
}

// The controller reads the lab's own Slurm, whatever its series: every node
// source and every job source give the same snapshot of the same state (a
// partly busy node, a two-node job, a pending job, a drained node). With
// GANGTOPO_CAPTURE_DIR set, the outputs read are saved there as test data
// for slurmstate (testdata/slurm-<series>).
func testEverySourceGivesOneSnapshot(t *testing.T) {
	reset(t)
	release, err := labRelease()
	if err != nil {
		t.Fatal(err)
	}
	running(t, "-w", "node03", "--gpus=3", "--cpus-per-gpu=1")
	running(t, "-N2", "-w", "node05,node06", "--gpus-per-node=8", "--cpus-per-gpu=1")
	submit(t, "--hold", "--gpus=16")
	if _, err := lab.Run(ctxT(t), 0, "scontrol", "update", "NodeName=node16", "State=DRAIN", "Reason=e2e"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = lab.Run(context.Background(), 0, "scontrol", "update", "NodeName=node16", "State=RESUME")
		reset(t)
	})
	capture(t, release)
	var first []byte
	firstName := ""
	for _, nodes := range nodeSourcesOf(release) {
		for _, jobs := range []string{"squeue", "scontrol"} {
			got := snapshotState(t, nodes, jobs)
			if first == nil {
				first, firstName = got, nodes+"/"+jobs
				checkSnapshotFacts(t, first)
				continue
			}
			if diff := cmp.Diff(string(first), string(got)); diff != "" {
				t.Errorf("--nodes-from %s --jobs-from %s differs from %s (-%s +got):\n%s", nodes, jobs, firstName, firstName, diff)
			}
		}
	}
	if !strings.HasPrefix(release, "22.") {
		out, err := gangtopo(t, "snapshot", "--from-slurm", "--topology", clusterFile, "--nodes-from", "sinfo", "-o", "-")
		if err == nil || !strings.Contains(out, "scontrol --json show nodes") {
			t.Errorf("--nodes-from sinfo on %s: want a refusal naming scontrol --json show nodes, got %v:\n%s", release, err, out)
		}
	}
}

// snapshotState is the nodes and jobs of `gangtopo snapshot --from-slurm`
// read from the given sources (time and generation left out).
func snapshotState(t *testing.T, nodesFrom, jobsFrom string) []byte {
	t.Helper()
	cmd := exec.Command(os.Getenv("GANGTOPO_BIN"), "snapshot", "--from-slurm", "--topology", clusterFile,
		"--nodes-from", nodesFrom, "--jobs-from", jobsFrom, "-o", "-")
	cmd.Env = lab.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gangtopo snapshot --nodes-from %s --jobs-from %s: %v\n%s", nodesFrom, jobsFrom, err, stderr.String())
	}
	var doc struct {
		Nodes json.RawMessage `json:"nodes"`
		Jobs  json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	both, _ := json.MarshalIndent(doc, "", " ")
	return both
}

// checkSnapshotFacts checks what the jobs hold: node03 3 GPUs, node05 and
// node06 all 8, node16 drained; two running jobs listed.
func checkSnapshotFacts(t *testing.T, data []byte) {
	t.Helper()
	var doc struct {
		Nodes []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			Free  []int  `json:"gpu_free_milli"`
		} `json:"nodes"`
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	busy := map[string]int{}
	state := map[string]string{}
	for _, n := range doc.Nodes {
		state[n.Name] = n.State
		for _, f := range n.Free {
			if f == 0 {
				busy[n.Name]++
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"node03": 3, "node05": 8, "node06": 8}, busy); diff != "" {
		t.Errorf("busy GPUs per node (-want +got):\n%s", diff)
	}
	if state["node16"] != "drain" {
		t.Errorf("node16 is %q, want drain", state["node16"])
	}
	if len(doc.Jobs) != 2 {
		t.Errorf("%d jobs in the snapshot, want the 2 running", len(doc.Jobs))
	}
}

// capture saves what each Slurm command prints into
// $GANGTOPO_CAPTURE_DIR/slurm-<release>/ (nothing when unset).
func capture(t *testing.T, release string) {
	dir := os.Getenv("GANGTOPO_CAPTURE_DIR")
	if dir == "" {
		return
	}
	dir = filepath.Join(dir, "slurm-"+release)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmds := map[string][]string{
		"sinfo.json":          {"sinfo", "--json"},
		"squeue.json":         {"squeue", "--json"},
		"scontrol_nodes.txt":  {"scontrol", "-a", "-d", "-o", "show", "node"},
		"scontrol_jobs.txt":   {"scontrol", "-a", "-d", "show", "job"},
		"scontrol_nodes.json": {"scontrol", "-a", "--json", "show", "nodes"},
	}
	for file, args := range cmds {
		if file == "scontrol_nodes.json" && strings.HasPrefix(release, "22.") {
			continue
		}
		out, stderr, err := lab.RunSplit(ctxT(t), 0, nil, args[0], args[1:]...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
