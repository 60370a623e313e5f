package e2e

import (
	"context"
	"strings"
	"testing"
)

func init() {
	register("DefaultPartitionInScope", testDefaultPartitionInScope)
	register("UnplacedJobsAreTold", testUnplacedJobsAreTold)
	register("EnvironmentDefaultDoesNotRefuse", testEnvironmentDefaultDoesNotRefuse)
	register("GPUsPerTaskWithoutTasks", testGPUsPerTaskWithoutTasks)
}

// The lab's gangtopo.yaml places GPU jobs of the partitions gpu (Slurm's
// default) and debug; the cluster file lists only gpu; cpu is a partition
// gangtopo.yaml leaves out. Every other test submits without -p, so its jobs
// reach job_submit without a partition and are in scope only because the
// plugin takes Slurm's default partition for them.

// testDefaultPartitionInScope: a gang submitted without -p is placed, as one
// submitted with -p gpu is.
func testDefaultPartitionInScope(t *testing.T) {
	reset(t)
	for _, args := range [][]string{
		{"--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"},
		{"-p", "gpu", "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"},
	} {
		j := running(t, args...)
		if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed request=leaf:required gpus=16") || len(leavesOf(t, j)) != 1 {
			t.Errorf("%v: on %v, decision %q; want placed in one leaf", args, j.Nodes, j.AdminComment)
		}
	}
}

// testUnplacedJobsAreTold: a job with an explicit --gang-topology that
// gangtopo does not place is accepted as submitted, and sbatch prints why
// (job_submit's err_msg on success), and the job carries the decision, so
// `gangtopo why` names the real reason rather than the scope.
func testUnplacedJobsAreTold(t *testing.T) {
	reset(t)
	tests := []struct {
		name  string
		args  []string
		note  string // in sbatch's stderr
		cause string // in the job's AdminComment
	}{
		{"partition outside gangtopo.yaml", []string{"-p", "cpu", "--gpus=8", "--gang-topology=leaf"},
			`gangtopo: --gang-topology=leaf:required is not applied: partition "cpu" is not in gangtopo.yaml's partitions (gpu, debug); the job is queued as submitted`,
			"cause=out_of_scope"},
		{"partition outside the cluster file", []string{"-p", "debug", "--gpus=8", "--gang-topology=leaf"},
			`gangtopo: --gang-topology=leaf:required is not applied: partition "debug" is not in the cluster file of lab16 (its partitions: gpu); the job is queued as submitted`,
			"cause=not_covered"},
		{"GPUs per socket", []string{"--gpus-per-socket=1", "--sockets-per-node=1", "--gang-topology=leaf"},
			"gangtopo: --gang-topology=leaf:required is not applied: --gpus-per-socket is not handled by gangtopo; the job is queued as submitted",
			"cause=unsupported"},
		{"node count range", []string{"-N", "1-2", "--gpus=2", "--gang-topology=leaf"},
			"gangtopo: --gang-topology=leaf:required is not applied: a node count range (-N 1-2) is not handled by gangtopo; the job is queued as submitted",
			"cause=unsupported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv := append([]string{"--parsable", "-o", "/dev/null"}, tc.args...)
			out, stderr, err := lab.RunSplit(context.Background(), 0, nil, "sbatch", append(argv, "--wrap", "sleep 100000")...)
			if err != nil {
				t.Fatalf("sbatch %v: %v: %s", tc.args, err, stderr)
			}
			if !strings.Contains(stderr, tc.note) {
				t.Errorf("sbatch %v printed\n%s\nwant\n%s", tc.args, stderr, tc.note)
			}
			id := strings.TrimSpace(out)
			j, err := lab.ShowJob(ctxT(t), id) // the decision is written at submit
			must(t, err)
			if !strings.Contains(j.AdminComment, "gangtopo v1 untouched "+tc.cause) || j.Features != "" {
				t.Errorf("job %s: AdminComment %q, Features %q; want the untouched decision (%s) and no binding", id, j.AdminComment, j.Features, tc.cause)
			}
			why, err := gangtopo(t, "why", id)
			if err != nil || !strings.Contains(why, "left the job as submitted (") {
				t.Errorf("gangtopo why %s: %v\n%s", id, err, why)
			}
		})
	}
}

// testEnvironmentDefaultDoesNotRefuse: `export GANGTOPO_TOPOLOGY=leaf:preferred`
// (docs/user.md) applies to GPU jobs and must not refuse the CPU jobs it does
// not apply to; an explicit --gang-topology on a CPU job is still refused
// (invalid_test.go).
func testEnvironmentDefaultDoesNotRefuse(t *testing.T) {
	reset(t)
	env := []string{"GANGTOPO_TOPOLOGY=leaf:preferred"}
	for _, args := range [][]string{{"-n1"}, {"-p", "cpu", "-n1"}, {"-p", "cpu", "--gpus=1"}} {
		id, err := trySubmit(env, args...)
		if err != nil {
			t.Errorf("GANGTOPO_TOPOLOGY=leaf:preferred sbatch %v: %v", args, err)
			continue
		}
		j, err := lab.ShowJob(ctxT(t), id)
		must(t, err)
		if j.AdminComment != "" {
			t.Errorf("job %s (%v) carries a decision %q; want it left alone", id, args, j.AdminComment)
		}
	}
	// the default still applies to a GPU job of a placed partition
	id, err := trySubmit(env, "--gpus=16", "--cpus-per-gpu=1")
	if err != nil {
		t.Fatal(err)
	}
	j, err := lab.ShowJob(ctxT(t), id)
	must(t, err)
	if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed request=leaf:preferred gpus=16") {
		t.Errorf("GPU job under the default: decision %q", j.AdminComment)
	}
}

// testGPUsPerTaskWithoutTasks: --gpus-per-task without -n is one task per
// node (Slurm's own rule), so gangtopo places it instead of passing it.
func testGPUsPerTaskWithoutTasks(t *testing.T) {
	reset(t)
	j := running(t, "-N", "2", "--gpus-per-task=4", "--cpus-per-gpu=1", "--gang-topology=leaf")
	if !strings.HasPrefix(j.AdminComment, "gangtopo v1 placed request=leaf:required gpus=8") || j.NumGPUs() != 8 || len(leavesOf(t, j)) != 1 {
		t.Errorf("on %v with %d GPUs, decision %q; want 8 GPUs placed in one leaf", j.Nodes, j.NumGPUs(), j.AdminComment)
	}
}
