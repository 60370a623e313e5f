package traces

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gangtopo/gangtopo/tests/tools/needs"
)

// The real traces, where present, must all parse.
func TestRealTraces(t *testing.T) {
	dir, err := Dir("")
	if err != nil {
		needs.Skip(t, "no trace directory: %v", err)
	}
	nodes, err := ReadNodes(filepath.Join(dir, OpenbNodes))
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	if len(nodes) != 1213 || gpus != 6212 {
		t.Errorf("openb GPU nodes: %d nodes, %d GPUs; want 1213 and 6212", len(nodes), gpus)
	}
	files, _ := filepath.Glob(filepath.Join(dir, OpenbDir, "openb_pod_list_*.csv"))
	if len(files) == 0 {
		t.Fatalf("no pod lists in %s", filepath.Join(dir, OpenbDir))
	}
	for _, f := range files {
		if _, err := ReadPods(f, Models(nodes)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{PublishedAlloc, PublishedFrag, PublishedFragRatio} {
		rows, err := ReadPublished(filepath.Join(dir, FGDExpected), f)
		if err != nil {
			t.Error(err)
		} else if len(rows) != 1020 {
			t.Errorf("%s: %d rows, want 1020", f, len(rows))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, PhillyJobs)); err == nil {
		if jobs, err := ReadPhilly(filepath.Join(dir, PhillyJobs)); err != nil || len(jobs) != 82247 {
			t.Errorf("philly: %d jobs, %v; want 82247", len(jobs), err)
		}
	}
}
