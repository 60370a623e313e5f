package jobsubmit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// From Slurm 23.02 on, -c/--cpus-per-task also lands in tres_per_task
// ("cpu=40"; cpus_per_task may be unset then). The decision must
// read such a job as 22.05's form of the same command line, not as a job
// with a GRES gangtopo does not know (which it would leave alone).
func TestCPUTresPerTask(t *testing.T) {
	d, _ := decideFixture(t, func(p *Policy) { p.Jobs = ScopeAll }, nil)
	tests := []struct {
		name     string
		job, old Job // old: what 22.05 gives for the same command line
	}{
		// -n1 -c40 --mem=1000: one task of 40 CPUs
		{"CPU-only -c40 (cpu=N)", Job{Partition: "gpu", NumTasks: 1, TresPerTask: "cpu=40", PnMinMemory: 1000, MinCPUs: 40},
			Job{Partition: "gpu", NumTasks: 1, CPUsPerTask: 40, PnMinMemory: 1000, MinCPUs: 40}},
		{"CPU-only -c40 (cpu:N), cpus_per_task set too", Job{Partition: "gpu", NumTasks: 1, TresPerTask: "cpu:40", CPUsPerTask: 40, MinCPUs: 40},
			Job{Partition: "gpu", NumTasks: 1, CPUsPerTask: 40, MinCPUs: 40}},
		// --gpus-per-task=2 -n4 -c3: the GPU entry stays
		{"--gpus-per-task=2 -n4 -c3", Job{TresPerTask: "cpu=3,gres/gpu:2", NumTasks: 4, MinCPUs: 12},
			Job{TresPerTask: "gres/gpu:2", NumTasks: 4, CPUsPerTask: 3, MinCPUs: 12}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, want := d.Prepare(tc.job), d.Prepare(tc.old)
			if got.Done || want.Done {
				t.Fatalf("not placed: %+v / %+v", got.Final, want.Final)
			}
			if diff := cmp.Diff(want.Request, got.Request); diff != "" {
				t.Errorf("request (-22.05 form +23.02 form):\n%s", diff)
			}
		})
	}
}
