package traces

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvDir is the environment variable that names the trace directory.
const EnvDir = "GANGTOPO_TRACES"

// Dir returns the trace directory: flagValue if set, else $GANGTOPO_TRACES,
// else ../shared/data/traces relative to the root of the checkout that
// contains the working directory (the layout of the development machines
// and CI). It fails when the chosen directory does not exist.
func Dir(flagValue string) (string, error) {
	switch {
	case flagValue != "":
		return checkDir(flagValue, "--traces")
	case os.Getenv(EnvDir) != "":
		return checkDir(os.Getenv(EnvDir), "$"+EnvDir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, ok := checkoutRoot(wd)
	if !ok {
		return "", fmt.Errorf("no trace directory: pass --traces or set $%s (%s is not inside a gangtopo checkout, so ../shared/data/traces cannot be found)", EnvDir, wd)
	}
	return checkDir(filepath.Join(root, "..", "shared", "data", "traces"), "the default trace directory")
}

func checkDir(dir, what string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s %s is not a directory", what, dir)
	}
	return dir, nil
}

// checkoutRoot walks up from dir to the first directory holding both go.mod
// and .git (a directory in a clone, a file in a worktree).
func checkoutRoot(dir string) (string, bool) {
	for {
		if exists(filepath.Join(dir, "go.mod")) && exists(filepath.Join(dir, ".git")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Paths of the files this package reads, relative to the trace directory.
const (
	OpenbDir    = "alibaba-clusterdata-gpu-v2023/csv"
	OpenbNodes  = OpenbDir + "/openb_node_list_gpu_node.csv"
	FGDExpected = "fgd-kubernetes-scheduler-simulator/expected_results"
	PhillyJobs  = "philly-via-pollux/philly.csv"
)

// OpenbPods is the path of one openb pod list, e.g. OpenbPods("default").
func OpenbPods(workload string) string {
	return OpenbDir + "/openb_pod_list_" + workload + ".csv"
}
