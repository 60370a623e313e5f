package fgd

import (
	"math/rand"
	"testing"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// testNodes is a small mixed cluster: an 8-GPU G2 node, two 2-GPU T4 nodes
// and a 4-GPU V100 node.
var testNodes = []Node{
	{Name: "g2-0", CPUMilli: 96000, MemMiB: 393216, GPUs: 8, Model: "G2"},
	{Name: "t4-0", CPUMilli: 32000, MemMiB: 131072, GPUs: 2, Model: "T4"},
	{Name: "t4-1", CPUMilli: 32000, MemMiB: 131072, GPUs: 2, Model: "T4"},
	{Name: "v100-0", CPUMilli: 48000, MemMiB: 262144, GPUs: 4, Model: "V100"},
}

func testCluster(t *testing.T) *topology.Cluster {
	t.Helper()
	c, err := BuildCluster("test", testNodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testPods mixes whole, multi-GPU, shared, CPU-only and constrained pods.
func testPods() []Pod {
	var pods []Pod
	add := func(n int, p Pod) {
		for i := 0; i < n; i++ {
			q := p
			q.Name = p.Name + "-" + string(rune('a'+i))
			pods = append(pods, q)
		}
	}
	add(6, Pod{Name: "whole", CPUMilli: 4000, MemMiB: 8192, GPUs: 1, Milli: 1000})
	add(5, Pod{Name: "share", CPUMilli: 2000, MemMiB: 4096, GPUs: 1, Milli: 400})
	add(2, Pod{Name: "quad", CPUMilli: 16000, MemMiB: 32768, GPUs: 4, Milli: 1000})
	add(3, Pod{Name: "cpu", CPUMilli: 8000, MemMiB: 16384})
	add(2, Pod{Name: "t4", CPUMilli: 2000, MemMiB: 4096, GPUs: 1, Milli: 1000, Models: []string{"T4"}, Spec: "T4"})
	return pods
}

func testWorkload(t *testing.T) *Workload {
	t.Helper()
	w, err := Prepare("test", testCluster(t), testPods())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// testEnv gives nodes ranks in id order.
func testEnv(w *Workload) *Env {
	ranks := make([]int32, len(w.Cluster.Nodes))
	for i := range ranks {
		ranks[i] = int32(i)
	}
	return &Env{Workload: w, Cluster: w.Cluster, Ranks: ranks, Rand: rand.New(rand.NewSource(1))}
}

// take allocates milli on the listed GPUs of node name, plus cpu.
func take(t *testing.T, s *occupancy.Snapshot, name string, milli uint16, cpu int32, gpus ...int) {
	t.Helper()
	n, ok := s.Cluster.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	na := occupancy.NodeAlloc{Node: n, GPUs: gpus, CPUMilli: cpu}
	if len(gpus) > 0 {
		na.Milli = milli
	}
	if err := s.Allocate(occupancy.Allocation{Nodes: []occupancy.NodeAlloc{na}}); err != nil {
		t.Fatal(err)
	}
}

func jobOf(t *testing.T, w *Workload, podName string) *Job {
	t.Helper()
	for i := range w.Jobs {
		if w.Jobs[i].Pod.Name == podName {
			return &w.Jobs[i]
		}
	}
	t.Fatalf("no pod %s", podName)
	return nil
}

func nodeID(t *testing.T, c *topology.Cluster, name string) topology.NodeID {
	t.Helper()
	n, ok := c.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return n
}
