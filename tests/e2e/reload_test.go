package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func init() {
	register("FixedConfigurationLoadsWithoutRestart", testFixedConfigurationLoadsWithoutRestart)
}

// testFixedConfigurationLoadsWithoutRestart: slurmctld starts with a
// gangtopo.yaml that does not load. Jobs pass unchanged, slurmctld runs on,
// and once the file is fixed the plugin loads it by itself, without a
// restart (`scontrol reconfigure` does not reload a job_submit plugin whose
// name did not change).
func testFixedConfigurationLoadsWithoutRestart(t *testing.T) {
	broken := strings.Replace(labConfig, "jobs: gpu", "jobs: everything", 1)
	writeConfig(t, broken)
	defer writeConfig(t, labConfig)
	offset := ctldLogSize()
	if err := lab.Restart(context.Background(), gangtopoPlugins(os.Getenv("GANGTOPO_PLUGINS"))); err != nil {
		t.Fatal(err)
	}
	want := `jobs: "everything" is not allowed (want gang or gpu or all); jobs pass unchanged until it loads: the plugin watches ` + configFile
	if logged := ctldLogSince(offset); !strings.Contains(logged, want) {
		t.Errorf("slurmctld log after the start:\n%s\nwant %q", logged, want)
	}
	publish(t)
	j := settle(t, submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"))
	if j.AdminComment != "" || j.Features != "" {
		t.Errorf("job %s was changed without a configuration: AdminComment %q, Features %q", j.ID, j.AdminComment, j.Features)
	}
	pid := lab.CtldPID
	writeConfig(t, labConfig)
	// the watch checks every second while nothing is loaded
	deadline := time.Now().Add(10 * time.Second)
	for {
		j := settle(t, submit(t, "--gpus=16", "--cpus-per-gpu=1", "--gang-topology=leaf"))
		if strings.HasPrefix(j.AdminComment, "gangtopo v1 placed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fixed configuration was not loaded: job %s decision %q; log:\n%s", j.ID, j.AdminComment, ctldLogSince(offset))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !strings.Contains(ctldLogSince(offset), "configuration "+configFile+" loaded") || lab.CtldPID != pid || !lab.CtldAlive() {
		t.Errorf("no load logged, or slurmctld restarted (pid %d -> %d)", pid, lab.CtldPID)
	}
}
