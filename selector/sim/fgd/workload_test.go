package fgd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrepare(t *testing.T) {
	w := testWorkload(t)
	if got := len(w.Jobs); got != 18 {
		t.Fatalf("%d jobs, want 18", got)
	}
	// whole, share, quad, cpu, t4: five distinct requests.
	if w.Types != 5 {
		t.Errorf("Types = %d, want 5", w.Types)
	}
	t4 := jobOf(t, w, "t4-a")
	if id, _ := w.Cluster.ModelByName("T4"); t4.Models != 1<<id {
		t.Errorf("t4 models = %b, want only T4", t4.Models)
	}
	share := jobOf(t, w, "share-a")
	if share.Req.Milli != 400 || share.Req.GPUs != 1 || share.Req.Nodes != 1 {
		t.Errorf("share request = %+v", share.Req)
	}
	// FGD's typical pods: counts 6, 5, 3, 2, 2 of 18; 95% = 17.1 needs all.
	if len(w.Typical.Node) != 5 || w.Typical.Node[0].Weight != 6.0/18 {
		t.Errorf("typical = %+v", w.Typical.Node)
	}
}

func TestPrepareErrors(t *testing.T) {
	c := testCluster(t)
	tests := []struct {
		name string
		pod  Pod
		want string
	}{
		{"unknown model", Pod{Name: "p", CPUMilli: 1, GPUs: 1, Milli: 1000, Models: []string{"A100"}}, `GPU model "A100" is not in the cluster`},
		{"share of two GPUs", Pod{Name: "p", CPUMilli: 1, GPUs: 2, Milli: 500}, "needs exactly one GPU"},
		{"GPUs without share", Pod{Name: "p", CPUMilli: 1, GPUs: 2}, "a GPU pod needs both"},
		{"negative", Pod{Name: "p", CPUMilli: -1}, "negative request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Prepare("x", c, []Pod{tc.pod})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Prepare error = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := BuildCluster("x", []Node{{Name: "n", CPUMilli: 1500, GPUs: 1, Model: "T4"}}); err == nil {
		t.Error("BuildCluster accepted 1.5 CPUs")
	}
}

func TestBuildCluster(t *testing.T) {
	c := testCluster(t)
	var got []string
	for _, n := range c.Nodes {
		got = append(got, n.Name)
	}
	if diff := cmp.Diff([]string{"g2-0", "t4-0", "t4-1", "v100-0"}, got); diff != "" {
		t.Errorf("node order (-want +got):\n%s", diff)
	}
	if len(c.GPUs) != 16 || c.Nodes[0].CPUs != 96 || c.Nodes[3].MemoryMiB != 262144 {
		t.Errorf("cluster: %d GPUs, node0 %d CPUs, node3 %d MiB", len(c.GPUs), c.Nodes[0].CPUs, c.Nodes[3].MemoryMiB)
	}
}
