package stepcost

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// fabric is 2 spines x 2 leaves x 4 DGX H100 (989 TFLOP/s, NVLink 450
// GB/s, 8 x 400 Gb/s = 50 GB/s of network a GPU), every leaf and spine
// oversubscribed 2:1: traffic between leaves of a spine gets half the
// network, between spines a quarter. Nodes node01-04 are leaf01 (spine1),
// 05-08 leaf02 (spine1), 09-12 leaf03 (spine2), 13-16 leaf04 (spine2).
func fabric(t *testing.T) *topology.Cluster {
	t.Helper()
	s := topotest.FatTreeSpec("fabric", 2, 2, 4, topotest.DGXH100)
	for i := range s.Spines {
		s.Spines[i].Oversubscription = 2
		for j := range s.Spines[i].Leaves {
			s.Spines[i].Leaves[j].Oversubscription = 2
		}
	}
	return topotest.MustBuild(s)
}

// on allocates gpusPerNode GPUs (0, 1, ...) on each of the nodes (1-based
// numbers of the fixture's node01..node16).
func on(gpusPerNode int, nodes ...int) occupancy.Allocation {
	var a occupancy.Allocation
	for _, n := range nodes {
		na := occupancy.NodeAlloc{Node: topology.NodeID(n - 1), Milli: occupancy.WholeGPU}
		for g := 0; g < gpusPerNode; g++ {
			na.GPUs = append(na.GPUs, g)
		}
		a.Nodes = append(a.Nodes, na)
	}
	return a
}

func class(name string) *Class {
	for i := range Classes {
		if Classes[i].Name == name {
			return &Classes[i]
		}
	}
	panic("no class " + name)
}

func TestFactorHandWorked(t *testing.T) {
	c := fabric(t)
	tests := []struct {
		name  string
		class string
		alloc occupancy.Allocation
		want  float64
	}{
		// Tensor parallelism, Llama-2-13B (central): demand 0.52 x 1000 x
		// 7/(6 x 5120) = 0.118490 GB/s per TFLOP/s, x 989 = 117.186 GB/s.
		// Best: one server's NVLink, 450 GB/s: step 1 + 117.186/450 =
		// 1.260414.
		{"tensor slice on one server", "llm-tp", on(8, 1), 1},
		// 4 + 4 in one leaf: each server gives 4 GPUs x 50 = 200 GB/s:
		// (1 + 117.186/200) / 1.260414 = 1.585931/1.260414 = 1.258262.
		{"tensor slice over two servers of a leaf", "llm-tp", on(4, 1, 2), 1.258262},
		// across leaves of spine1: 200/2 = 100: (1 + 1.171862)/1.260414 = 1.723134.
		{"tensor slice over two leaves", "llm-tp", on(4, 1, 5), 1.723134},
		// across spines: 200/(2 x 2) = 50: (1 + 2.343724)/1.260414 = 2.652878.
		{"tensor slice over two spines", "llm-tp", on(4, 1, 9), 2.652878},
		// one GPU on each of 8 servers over both spines: 1 x 50/4 = 12.5:
		// (1 + 9.374896)/1.260414 = 8.231341.
		{"tensor slice one GPU a server", "llm-tp", on(1, 1, 2, 5, 6, 9, 10, 13, 14), 8.231341},
		// Data parallelism behind 68% scaling (central): (1-0.68)/0.68 x
		// 12.5/125 = 0.0470588 GB/s per TFLOP/s, x 989 = 46.5412 GB/s.
		// Best for 16 GPUs: two whole servers of a leaf, 8 x 50 = 400 GB/s
		// (NVLink 450 is faster): step 1.116353.
		{"data parallel on two whole servers", "dp-cnn", on(8, 1, 2), 1},
		// two whole servers in different spines: 400/4 = 100:
		// (1 + 0.465412)/1.116353 = 1.312678.
		{"data parallel over two spines", "dp-cnn", on(8, 1, 9), 1.312678},
		// 2 GPUs on each of 8 servers over both spines: 2 x 50/4 = 25:
		// (1 + 1.861647)/1.116353 = 2.563389.
		{"data parallel spread thin", "dp-cnn", on(2, 1, 2, 5, 6, 9, 10, 13, 14), 2.563389},
		// GPT-3 175B (central), 16 GPUs: tensor 8 in each server, 2
		// pipeline stages of 48 layers. Tensor demand 0.52 x 1000 x
		// 7/(6 x 12288) x 989 = 48.8276 GB/s over NVLink either way;
		// pipeline 0.52 x 1000/(24 x 12288 x 48) x 989 = 0.036330 GB/s
		// over one NIC: 50 in a leaf, 12.5 across spines:
		// (1 + 0.108506 + 0.002906)/(1 + 0.108506 + 0.000727) = 1.001965.
		{"pipeline stages over two spines", "llm-3d", on(8, 1, 9), 1.001965},
		// Mixtral-8x7B (central), 16 GPUs, expert groups of 8: all-to-all
		// demand 57,344 bytes over 2,566,914,048 FLOPs a token and layer,
		// x 0.52 x 1000 x 989 = 11.4888 GB/s; data (dense gradients over
		// 16) 0.52 x 1000 x 16/(2 x 4,194,304) x 989 = 0.980911 GB/s.
		// Best: each group on one server's NVLink (450), the ring over two
		// whole servers 400. One GPU on each of 16 servers: each group
		// spans a spine's two leaves, all its traffic on one NIC at 50/2
		// = 25; the ring spans spines, 50/4 = 12.5:
		// (1 + 11.4888/25 + 0.980911/12.5)/(1 + 11.4888/450 + 0.980911/400)
		// = 1.538028/1.027983 = 1.496160.
		{"experts one GPU a server", "moe", on(1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16), 1.496160},
	}
	m := New(c, Central)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := m.costOf(class(tc.class), tc.alloc).Factor
			if math.Abs(got-tc.want) > 5e-6 {
				t.Errorf("factor = %.6f, want %.6f", got, tc.want)
			}
		})
	}
}

func TestBandwidthsOfGroups(t *testing.T) {
	c := fabric(t)
	pcie := topotest.SingleNode(topotest.PCIeTwoSocket("box"))
	nvl := topotest.NVL72(2)
	g := func(c *topology.Cluster, a occupancy.Allocation) []gpu { return layout(c, a) }
	inf := math.Inf(1)
	tests := []struct {
		name string
		f    func() float64
		want float64
	}{
		{"one GPU sends nothing", func() float64 { return ring(c, g(c, on(1, 1))) }, inf},
		{"ring in one island: NVLink", func() float64 { return ring(c, g(c, on(8, 1))) }, 450},
		// 3 GPUs on node01 and 1 on node02, one leaf: min(3 x 50, 1 x 50) = 50.
		{"uneven ring: the thinnest server paces it", func() float64 {
			a := on(3, 1)
			a.Nodes = append(a.Nodes, on(1, 2).Nodes...)
			return ring(c, g(c, a))
		}, 50},
		// two islands of one PCIe server: the host's PCIe Gen4, 32 GB/s.
		{"ring across PCIe islands", func() float64 { return ring(pcie, g(pcie, on(2, 1))) }, 32},
		// two trays of one NVL72 rack: the rack's NVLink, 900 GB/s.
		{"ring inside an NVLink block", func() float64 { return ring(nvl, g(nvl, on(4, 1, 2))) }, 900},
		// a tray of each rack (leaf1 holds both racks): 4 x 50 = 200.
		{"ring across NVLink blocks", func() float64 { return ring(nvl, g(nvl, on(4, 1, 19))) }, 200},
		{"send inside a server", func() float64 { return pair(c, gpu{0, c.GPUs[0].Island}, gpu{0, c.GPUs[1].Island}) }, 450},
		// node01 to node09: one NIC, 50, over both spines' uplinks: 12.5.
		{"send across spines", func() float64 {
			return pair(c, gpu{0, c.GPUs[0].Island}, gpu{8, c.GPUs[64].Island})
		}, 12.5},
		// 8 GPUs, 4 on each of node01 and node02: 3/8 of the data stays on
		// NVLink (3/8/450), 4/8 leaves on 50 (0.01): 7/8 / 0.01 = 87.5.
		{"all-to-all over two servers", func() float64 { return allToAll(c, g(c, on(4, 1, 2))) }, 87.5},
		{"all-to-all in one server", func() float64 { return allToAll(c, g(c, on(8, 1))) }, 450},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f(); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Errorf("bandwidth = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		class string
		gpus  int
		want  Split
	}{
		{"dp-cnn", 16, Split{TP: 1, PP: 1, DP: 16, EP: 1}},
		{"llm-tp", 4, Split{TP: 4, PP: 1, DP: 1, EP: 1}},
		{"llm-3d", 16, Split{TP: 8, PP: 2, DP: 1, EP: 1}},
		{"llm-3d", 12, Split{TP: 4, PP: 3, DP: 1, EP: 1}},    // 12 = 4 x 3
		{"llm-3d", 128, Split{TP: 8, PP: 8, DP: 2, EP: 1}},   // 16 stages would do; 8 is the most
		{"moe", 24, Split{TP: 1, PP: 1, DP: 24, EP: 8}},      // 24 = 3 groups of 8
		{"moe", 12, Split{TP: 1, PP: 1, DP: 12, EP: 4}},      // 12 = 3 groups of 4
		{"llm-3d", 24, Split{TP: 8, PP: 3, DP: 1, EP: 1}},    // 24 = 8 x 3
		{"llm-3d", 64, Split{TP: 8, PP: 8, DP: 1, EP: 1}},    // 64 = 8 x 8
		{"dp-cnn", 2, Split{TP: 1, PP: 1, DP: 2, EP: 1}},     // two replicas
		{"llm-tp", 8, Split{TP: 8, PP: 1, DP: 1, EP: 1}},     // one slice
		{"moe", 16, Split{TP: 1, PP: 1, DP: 16, EP: 8}},      // two groups
		{"llm-3d", 32, Split{TP: 8, PP: 4, DP: 1, EP: 1}},    // four stages
		{"llm-3d", 9, Split{TP: 1, PP: 3, DP: 3, EP: 1}},     // odd: no tensor slice
		{"llm-3d", 10, Split{TP: 2, PP: 5, DP: 1, EP: 1}},    // 10 = 2 x 5
		{"moe", 10, Split{TP: 1, PP: 1, DP: 10, EP: 2}},      // 10 = 5 groups of 2
		{"dp-cnn", 128, Split{TP: 1, PP: 1, DP: 128, EP: 1}}, // replicas only
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.class, tc.gpus), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, splitFor(class(tc.class), tc.gpus)); diff != "" {
				t.Errorf("split (-want +got):\n%s", diff)
			}
		})
	}
}

// The demand formulas on the sources' own figures (docs/replay.md).
func TestDemandsFromSources(t *testing.T) {
	got := map[string]float64{
		// (1-0.76)/0.76 x 12.5/125 = 0.031579
		"scaling 76%": ScalingDemand(0.76, 12.5, 125),
		// (1-0.60)/0.60 x 12.5/125 = 0.066667
		"scaling 60%": ScalingDemand(0.60, 12.5, 125),
		// 0.52 x 1000 x 7/(6 x 25600) = 0.023698
		"tensor 8 of Megatron-1T": TensorDemand(25600, 8),
		// 0.52 x 1000 x 1/(6 x 4096) = 0.021159
		"tensor 2 of Llama-2-7B": TensorDemand(4096, 2),
		"tensor 1 sends nothing": TensorDemand(4096, 1),
		// 0.52 x 1000/(24 x 8192 x 10) = 0.00026449
		"pipeline of Llama-2-70B, 10 layers a stage": PipelineDemand(8192, 10),
		// 0.52 x 1000 x 8/(2 x 4,194,304) = 0.00049591
		"data over 8 replicas": DataDemand(8),
		"data over 1 replica":  DataDemand(1),
		// 57,344/2,566,914,048 x 520 = 0.011617
		"experts of Mixtral over 8": ExpertDemand(mixtral, 8),
	}
	want := map[string]float64{
		"scaling 76%": 0.031579, "scaling 60%": 0.066667, "tensor 8 of Megatron-1T": 0.023698,
		"tensor 2 of Llama-2-7B": 0.021159, "tensor 1 sends nothing": 0, "pipeline of Llama-2-70B, 10 layers a stage": 0.00026449,
		"data over 8 replicas": 0.00049591, "data over 1 replica": 0, "experts of Mixtral over 8": 0.011617,
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(2e-4, 0)); diff != "" {
		t.Errorf("demands (-want +got):\n%s", diff)
	}
}

func TestBandsOrderTheFactor(t *testing.T) {
	c := fabric(t)
	a := on(4, 1, 9) // a slice or a ring over two spines
	for _, name := range []string{"dp-cnn", "llm-tp", "moe"} {
		var f [NumBands]float64
		for b := Low; b < NumBands; b++ {
			f[b] = New(c, b).costOf(class(name), a).Factor
		}
		if !(1 < f[Low] && f[Low] < f[Central] && f[Central] < f[High]) {
			t.Errorf("%s: factors low %g, central %g, high %g: want 1 < low < central < high", name, f[Low], f[Central], f[High])
		}
	}
}

func TestDrawIsStableAndFollowsTheWeights(t *testing.T) {
	if Draw("philly.csv:7", 1) != nil {
		t.Errorf("a one-GPU job has no collective, so no class")
	}
	if a, b := Draw("philly.csv:42", 16), Draw("philly.csv:42", 16); a != b {
		t.Errorf("the same job drew %s and %s", a.Name, b.Name)
	}
	count := map[string]int{}
	const n = 30000
	for i := 0; i < n; i++ {
		count[Draw(fmt.Sprintf("philly.csv:%d", i), 16).Name]++
	}
	// three classes of weight 1 for 16 GPUs: 10,000 each, give or take
	// 3 standard deviations (sqrt(30000 x 1/3 x 2/3) = 82).
	for _, name := range []string{"dp-cnn", "llm-3d", "moe"} {
		if d := count[name] - n/3; d < -250 || d > 250 {
			t.Errorf("%s drawn %d times of %d, want about %d", name, count[name], n, n/3)
		}
	}
	if count["llm-tp"] != 0 {
		t.Errorf("llm-tp drawn for 16 GPUs (it is for 2 to 8)")
	}
}

func TestParseBand(t *testing.T) {
	for _, s := range []string{"low", "Central", " high "} {
		if _, err := ParseBand(s); err != nil {
			t.Errorf("ParseBand(%q): %v", s, err)
		}
	}
	if _, err := ParseBand("middle"); err == nil || err.Error() != `unknown band "middle" (want low, central or high)` {
		t.Errorf("ParseBand(middle) = %v", err)
	}
}
