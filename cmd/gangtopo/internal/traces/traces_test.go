package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/sim/fgd"
)

func TestReadNodes(t *testing.T) {
	got, err := ReadNodes("testdata/nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{Node: fgd.Node{Name: "node-a", CPUMilli: 64000, MemMiB: 262144, GPUs: 2, Model: "P100"}, At: "testdata/nodes.csv:2"},
		{Node: fgd.Node{Name: "node-b", CPUMilli: 96000, MemMiB: 393216, GPUs: 8, Model: "G2"}, At: "testdata/nodes.csv:3"},
		{Node: fgd.Node{Name: "node-c", CPUMilli: 32000, MemMiB: 131072, GPUs: 4, Model: "V100M16"}, At: "testdata/nodes.csv:4"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadNodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"G2", "P100", "V100M16"}, Models(got)); diff != "" {
		t.Errorf("Models (-want +got):\n%s", diff)
	}
}

func TestReadPods(t *testing.T) {
	models := []string{"G2", "P100", "V100M16"}
	got, err := ReadPods("testdata/pods.csv", models)
	if err != nil {
		t.Fatal(err)
	}
	at := func(l string) string { return "testdata/pods.csv:" + l }
	want := []Pod{
		{Pod: fgd.Pod{Name: "pod-0", CPUMilli: 12000, MemMiB: 16384, GPUs: 1, Milli: 1000}, At: at("2")},
		{Pod: fgd.Pod{Name: "pod-1", CPUMilli: 6000, MemMiB: 12288, GPUs: 1, Milli: 460}, At: at("3")},
		{Pod: fgd.Pod{Name: "pod-2", CPUMilli: 4000, MemMiB: 8192}, At: at("4")},
		{Pod: fgd.Pod{Name: "pod-3", CPUMilli: 32000, MemMiB: 65536, GPUs: 8, Milli: 1000, Models: []string{"G2"}, Spec: "G2"}, At: at("5")},
		// The empty entry between the bars is dropped, as FGD does; the
		// model name matches ignoring case but keeps the trace's spelling.
		{Pod: fgd.Pod{Name: "pod-4", CPUMilli: 8000, MemMiB: 16384, GPUs: 2, Milli: 1000, Models: []string{"V100M16", "p100"}, Spec: "V100M16|p100"}, At: at("6")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadPods (-want +got):\n%s", diff)
	}
	multi, err := ReadPods("testdata/pods_multigpu.csv", models)
	if err != nil {
		t.Fatal(err)
	}
	if len(multi) != 2 || multi[0].GPUs != 4 || multi[1].Milli != 300 {
		t.Errorf("ReadPods(multigpu) = %+v", multi)
	}
}

func TestReadPhilly(t *testing.T) {
	got, err := ReadPhilly("testdata/philly.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Submit: time.Date(2017, 10, 9, 7, 1, 55, 0, time.UTC), Duration: 66 * time.Second, GPUs: 1, Cluster: "11cb48", At: "testdata/philly.csv:2"},
		{Submit: time.Date(2017, 10, 9, 6, 13, 3, 0, time.UTC), Duration: 2951500 * time.Millisecond, GPUs: 16, Cluster: "6214e9", At: "testdata/philly.csv:3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadPhilly (-want +got):\n%s", diff)
	}
}

// Every malformed input fails with the file, the line and the column.
func TestBadInput(t *testing.T) {
	const podHead = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
	const nodeHead = "sn,cpu_milli,memory_mib,gpu,model\n"
	tests := []struct {
		name, kind, text, want string
	}{
		{"wrong column count", "pods", podHead + "p0,1000,10,1,1000,,extra\n", "x.csv:2: 7 columns, want 6"},
		{"negative GPUs", "pods", podHead + "p0,1000,10,-1,1000,\n", "x.csv:2: column num_gpu: -1 is negative"},
		{"unknown model", "pods", podHead + "p0,1000,10,1,1000,A100\n", `x.csv:2: column gpu_spec: unknown GPU model "A100" (the node list has G2, T4)`},
		{"not a number", "pods", podHead + "p0,lots,10,1,1000,\n", `x.csv:2: column cpu_milli: "lots" is not a whole number`},
		{"share too big", "pods", podHead + "p0,1000,10,1,1500,\n", "x.csv:2: column gpu_milli: 1500 is out of range (want 0..1000)"},
		{"multi-GPU share", "pods", podHead + "p0,1000,10,2,500,\n", "column gpu_milli: a share of 500 milli-GPUs needs num_gpu 1, not 2"},
		{"GPU pod without share", "pods", podHead + "p0,1000,10,1,0,\n", "column gpu_milli: 0 for a pod with 1 GPUs"},
		{"share without GPUs", "pods", podHead + "p0,1000,10,0,200,\n", "column gpu_milli: 200 milli-GPUs for a pod with num_gpu 0"},
		{"duplicate pod", "pods", podHead + "p0,1000,10,1,1000,\np0,1000,10,1,1000,\n", `x.csv:3: column name: pod "p0" is listed twice (first on line 2)`},
		{"missing column", "pods", "name,cpu_milli,num_gpu,gpu_milli\n", "x.csv:1: header lacks column(s) memory_mib"},
		{"empty file", "pods", "", "x.csv: empty file"},
		{"no rows", "pods", podHead, "x.csv: no pods"},
		{"GPUs without model", "nodes", nodeHead + "n0,1000,10,2,\n", "x.csv:2: column model: node n0 has 2 GPUs but no model"},
		{"negative CPUs", "nodes", nodeHead + "n0,-5,10,2,T4\n", "x.csv:2: column cpu_milli: -5 is negative"},
		{"bad quote", "nodes", nodeHead + "n0,\"1000,10,2,T4\n", "x.csv:2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.csv")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.kind == "pods" {
				_, err = ReadPods(path, []string{"G2", "T4"})
			} else {
				_, err = ReadNodes(path)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	_, err := ReadNodes("testdata/nope.csv")
	if err == nil || !strings.Contains(err.Error(), "testdata/nope.csv") {
		t.Errorf("error = %v, want one naming the file", err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	if got, err := Dir(""); err != nil || got != dir {
		t.Errorf("Dir from env = %q, %v; want %q", got, err, dir)
	}
	if got, err := Dir("testdata"); err != nil || got != "testdata" {
		t.Errorf("Dir from flag = %q, %v", got, err)
	}
	if _, err := Dir(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--traces") {
		t.Errorf("Dir(missing) error = %v, want one naming --traces", err)
	}
	t.Setenv(EnvDir, "")
	// From inside the checkout the default is ../shared/data/traces; it
	// exists on the development machines and in CI.
	if got, err := Dir(""); err == nil && !strings.HasSuffix(got, filepath.Join("shared", "data", "traces")) {
		t.Errorf("Dir default = %q", got)
	}
}
