package e2e

import (
	"context"
	"strings"
	"testing"
)

func init() {
	register("InvalidInputRefusedAtSubmit", testInvalidInputRefusedAtSubmit)
}

// testInvalidInputRefusedAtSubmit gathers every input gangtopo refuses at
// submit time. sbatch must fail at once, print the documented message
// (docs/user.md, "Errors"), and no job may be created.
//
// Two layers refuse: the SPANK plugin inside sbatch (the option's syntax,
// before anything reaches slurmctld) and the job_submit plugin inside
// slurmctld (what depends on the cluster: tiers, sizes, models).
func testInvalidInputRefusedAtSubmit(t *testing.T) {
	reset(t)
	before := jobIDs(t)
	tests := []struct {
		name string
		env  []string // extra environment for sbatch
		args []string
		want string // in sbatch's stderr
	}{
		// SPANK plugin, in sbatch
		{"typo in tier", nil, []string{"--gang-topology=nvlnk", "--gpus=8"},
			`gangtopo: --gang-topology: unknown tier "nvlnk" (want one of nvlink, node, block, leaf, spine, any)`},
		{"bad mode", nil, []string{"--gang-topology=leaf:sometimes", "--gpus=8"},
			`gangtopo: --gang-topology: unknown mode "sometimes" (want required or preferred)`},
		{"slice zero", nil, []string{"--gang-topology=leaf,slice=0", "--gpus=8"},
			`gangtopo: --gang-topology: slice="0" is not a GPU count (want 1..576)`},
		{"unknown setting", nil, []string{"--gang-topology=leaf,slices=8", "--gpus=8"},
			`gangtopo: --gang-topology: unknown setting "slices=8" (the only setting is slice=S)`},
		{"empty value", nil, []string{"--gang-topology=", "--gpus=8"},
			"gangtopo: --gang-topology: empty value"},
		{"bad default from environment", []string{"GANGTOPO_TOPOLOGY=leef"}, []string{"--gpus=8"},
			`gangtopo: $GANGTOPO_TOPOLOGY: unknown tier "leef"`},
		// job_submit plugin, in slurmctld
		{"tier the cluster lacks", nil, []string{"--gang-topology=block", "--gpus=8"},
			"gangtopo: --gang-topology=block:required: cluster lab16 has no block domains (its tiers: nvlink, node, leaf, spine, any)"},
		{"slice does not divide the gang", nil, []string{"--gang-topology=leaf,slice=8", "--gpus=12"},
			"gangtopo: slice=8 does not divide the 12 GPUs of the gang"},
		{"option without GPUs", nil, []string{"--gang-topology=leaf", "-n1"},
			"gangtopo: --gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)"},
		{"gang larger than any leaf", nil, []string{"--gang-topology=leaf", "--gpus=64"},
			"gangtopo: 64 GPUs can never fit in one leaf: the largest (leaf1) holds 32; use --gang-topology=spine, or ask for at most 32 GPUs"},
		{"gang larger than any NVLink domain", nil, []string{"--gang-topology=nvlink", "--gpus=16"},
			"gangtopo: 16 GPUs can never fit in one nvlink: the largest (node01/nvl0) holds 8; use --gang-topology=leaf, or ask for at most 8 GPUs"},
		{"gang larger than the cluster", nil, []string{"--gang-topology=spine:preferred", "--gpus=256"},
			"gangtopo: 256 GPUs can never fit"},
		{"GPU model the cluster lacks", nil, []string{"--gang-topology=leaf", "--gpus=a100:8"},
			`gangtopo: GPU model "a100" is not in cluster lab16 (its GPUs: h100)`},
		{"option with zero GPUs", nil, []string{"--gang-topology=leaf", "--gpus=0"},
			"gangtopo: --gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)"},
		// the refusal names the resource that rules the gang out
		{"memory no node has", nil, []string{"--gang-topology=leaf", "--gpus=8", "--mem=999999999"},
			"gangtopo: 8 GPUs can never fit in one leaf: memory rules it out: it asks 999999999 MiB (125000000 per GPU) and a node has at most 1000000 MiB; ask for less memory"},
		{"CPUs no node has", nil, []string{"--gpus=1", "--cpus-per-gpu=200"},
			"gangtopo: 1 GPU can never fit in cluster lab16: CPUs rule it out: it asks 200 CPUs (200 per GPU) and a node has at most 64; ask for fewer CPUs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := append([]string{"--parsable", "-o", "/dev/null"}, tc.args...)
			argv = append(argv, "--wrap", "true")
			out, stderr, err := lab.RunSplit(context.Background(), 0, tc.env, "sbatch", argv...)
			if err == nil {
				t.Fatalf("sbatch %v succeeded (job %s), want refusal", tc.args, strings.TrimSpace(out))
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("sbatch %v: stderr\n%s\nwant it to contain\n%s", tc.args, stderr, tc.want)
			}
		})
	}
	if after := jobIDs(t); after != before {
		t.Errorf("refused submissions created jobs: before %q, after %q", before, after)
	}
}

// jobIDs lists every job slurmctld knows, finished ones included.
func jobIDs(t *testing.T) string {
	t.Helper()
	out, err := lab.Run(context.Background(), 0, "squeue", "-h", "-t", "all", "-o", "%i")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(out), ",")
}
