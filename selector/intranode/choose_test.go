package intranode

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// freeExcept returns k whole free GPUs except the busy ones.
func freeExcept(k int, busy ...int) []uint16 {
	f := make([]uint16, k)
	for i := range f {
		f[i] = 1000
	}
	for _, b := range busy {
		f[b] = 0
	}
	return f
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name      string
		hw        topotest.NodeFunc
		free      []uint16
		need      Need
		want      []int
		wantLinks int
	}{
		// DGX-1: 2-link pairs on one NUMA node and one PCIe switch are (2,3)
		// and (6,7); the lowest wins.
		{"dgx1 pair", topotest.DGX1, freeExcept(8), Need{Count: 2, Milli: 1000}, []int{2, 3}, 2},
		// The quads 0-3 and 4-7 have 1+1+2+2+1+2 = 9 links; anything mixed has fewer.
		{"dgx1 quad", topotest.DGX1, freeExcept(8), Need{Count: 4, Milli: 1000}, []int{0, 1, 2, 3}, 9},
		// Reference 2: stock Slurm took 2,3,5,6 (lowest free) with 5 links
		// while 4-7 (9 links) was free.
		{"dgx1 quad with 0,1 busy", topotest.DGX1, freeExcept(8, 0, 1), Need{Count: 4, Milli: 1000}, []int{4, 5, 6, 7}, 9},
		// GPU 1 busy: (0,3) and (2,3) have 2 links; (2,3) shares a PCIe switch.
		{"dgx1 pair around a hole", topotest.DGX1, freeExcept(8, 1), Need{Count: 2, Milli: 1000}, []int{2, 3}, 2},
		// NVSwitch: links are equal; stay on one NUMA node and keep the
		// other NUMA node whole: take from 1-3, not from 4-7.
		{"h100 keeps a numa whole", topotest.DGXH100, freeExcept(8, 0), Need{Count: 2, Milli: 1000}, []int{1, 2}, 18},
		{"h100 whole node", topotest.DGXH100, freeExcept(8), Need{Count: 8, Milli: 1000}, []int{0, 1, 2, 3, 4, 5, 6, 7}, 28 * 18},
		// A100: 3 GPUs on NUMA 3? No NUMA holds 3 (pairs); fewest NUMAs is 2
		// and fewest switches 2: 0,1 + 2 keeps pairs 4-5 and 6-7 whole.
		{"a100 three", topotest.DGXA100, freeExcept(8), Need{Count: 3, Milli: 1000}, []int{0, 1, 2}, 3 * 12},
		// Bridged pairs: with GPU 0 busy, a 2-GPU job gets the bridged pair 2-3.
		{"pcie4 pair", topotest.PCIeFourGPU, freeExcept(4, 0), Need{Count: 2, Milli: 1000}, []int{2, 3}, 4},
		// A 1-GPU job takes GPU 1 and keeps the pair 2-3 whole.
		{"pcie4 single keeps pair", topotest.PCIeFourGPU, freeExcept(4, 0), Need{Count: 1, Milli: 1000}, []int{1}, 0},
		{"pcie8 four on one socket", topotest.PCIeEightGPU, freeExcept(8), Need{Count: 4, Milli: 1000}, []int{0, 1, 2, 3}, 8},
		// slice=2: island 0-1 has one free GPU, so 2-3 and 4-5 are taken.
		{"pcie8 slices", topotest.PCIeEightGPU, freeExcept(8, 1, 6, 7), Need{Count: 4, Milli: 1000, Slice: 2}, []int{2, 3, 4, 5}, 8},
		// No NVLink: one socket, one switch.
		{"two socket pair", topotest.PCIeTwoSocket, freeExcept(8), Need{Count: 2, Milli: 1000}, []int{0, 1}, 0},
		// GPU 4 busy: four GPUs fit on socket 0 only.
		{"two socket four", topotest.PCIeTwoSocket, freeExcept(8, 4), Need{Count: 4, Milli: 1000}, []int{0, 1, 2, 3}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := topotest.SingleNode(tc.hw("n1"))
			got, ok := Choose(c, &c.Nodes[0], tc.free, tc.need)
			if !ok {
				t.Fatal("Choose found nothing")
			}
			if diff := cmp.Diff(tc.want, got.GPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			if got.Links != tc.wantLinks {
				t.Errorf("Links = %d, want %d", got.Links, tc.wantLinks)
			}
		})
	}
}

// The choice must be the best-connected set: check against brute force over
// every DGX-1 occupancy pattern and request size.
func TestChooseDGX1MaximisesLinks(t *testing.T) {
	c := topotest.SingleNode(topotest.DGX1("n1"))
	n := &c.Nodes[0]
	for mask := 0; mask < 256; mask++ {
		var free []uint16
		var freeIdx []int
		for i := 0; i < 8; i++ {
			if mask&(1<<i) != 0 {
				free = append(free, 1000)
				freeIdx = append(freeIdx, i)
			} else {
				free = append(free, 0)
			}
		}
		for k := 1; k <= len(freeIdx); k++ {
			got, ok := Choose(c, n, free, Need{Count: k, Milli: 1000})
			if !ok {
				t.Fatalf("mask %08b k %d: nothing chosen", mask, k)
			}
			if best := bruteLinks(n, freeIdx, k); got.Links != best {
				t.Errorf("mask %08b k %d: chose %v with %d links, best has %d", mask, k, got.GPUs, got.Links, best)
			}
		}
	}
}

func bruteLinks(n *topology.Node, free []int, k int) int {
	best := -1
	var rec func(start int, set []int)
	rec = func(start int, set []int) {
		if len(set) == k {
			l := 0
			for a := range set {
				for b := a + 1; b < len(set); b++ {
					l += n.Links(set[a], set[b])
				}
			}
			best = max(best, l)
			return
		}
		for i := start; i < len(free); i++ {
			rec(i+1, append(set, free[i]))
		}
	}
	rec(0, nil)
	return best
}

func TestChooseShareUsesFrag(t *testing.T) {
	c := topotest.SingleNode(topotest.PCIeFourGPU("n1"))
	// Partial leftovers are what a fragmentation measure dislikes: putting
	// 500 milli on GPU 2 (600 free) leaves 300+100 partial, on GPU 0 it
	// would leave 300+600+500.
	partial := func(after []uint16) float64 {
		s := 0.0
		for _, f := range after {
			if f < 1000 {
				s += float64(f)
			}
		}
		return s
	}
	got, ok := Choose(c, &c.Nodes[0], []uint16{1000, 300, 600, 1000}, Need{Count: 1, Milli: 500, Frag: partial})
	if !ok || !cmp.Equal(got.GPUs, []int{2}) {
		t.Errorf("share went to %v, want [2]", got.GPUs)
	}
}

func TestChooseLargeNodeIsBounded(t *testing.T) {
	// A 16-GPU NVSwitch node asked for 8 GPUs: C(16,8) = 12870 subsets is
	// above ExhaustiveLimit, so the greedy search runs.
	hw := func(name string) topology.NodeSpec {
		n := topology.NodeSpec{Name: name, CPUs: 64, MemoryMiB: 1 << 20, Links: topotest.FullMesh(16, 18)}
		for i := 0; i < 16; i++ {
			n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "x", NUMA: i / 8, PCIeSwitch: i / 4})
		}
		return n
	}
	c := topotest.SingleNode(hw("big"))
	got, ok := Choose(c, &c.Nodes[0], freeExcept(16, 0), Need{Count: 8, Milli: 1000})
	if !ok || len(got.GPUs) != 8 || got.Islands != 1 || got.NUMAs != 1 {
		t.Errorf("greedy choice %+v", got)
	}
	got, ok = Choose(c, &c.Nodes[0], freeExcept(16, 0), Need{Count: 8, Milli: 1000, Slice: 8})
	if !ok || len(got.GPUs) != 8 {
		t.Errorf("greedy slice choice %+v ok=%v", got, ok)
	}
}

func TestUsable(t *testing.T) {
	c := topotest.SingleNode(topotest.PCIeEightGPU("n1"))
	n := &c.Nodes[0]
	free := freeExcept(8, 1, 6) // pairs: 0-1 has 1 free, 2-3 and 4-5 whole, 6-7 has 1
	tests := []struct {
		need Need
		want int
	}{
		{Need{Count: 1, Milli: 1000}, 6},
		{Need{Count: 2, Milli: 1000, Slice: 2}, 4},
		{Need{Count: 4, Milli: 1000, Slice: 4}, 0},
		{Need{Count: 1, Milli: 1000, Models: topology.ModelSet(0).With(1)}, 0},
	}
	for _, tc := range tests {
		if got := Usable(c, n, free, tc.need); got != tc.want {
			t.Errorf("Usable(%+v) = %d, want %d", tc.need, got, tc.want)
		}
	}
	if _, ok := Choose(c, n, free, Need{Count: 6, Milli: 1000, Slice: 2}); ok {
		t.Error("Choose satisfied 6 GPUs in slices of 2 with only 4 usable")
	}
}

// BenchmarkChooseDGX1Quad: 4 of 8 GPUs on a hybrid cube mesh (70 subsets).
func BenchmarkChooseDGX1Quad(b *testing.B) {
	c := topotest.SingleNode(topotest.DGX1("n1"))
	free := freeExcept(8, 1)
	b.ReportAllocs()
	for b.Loop() {
		Choose(c, &c.Nodes[0], free, Need{Count: 4, Milli: 1000})
	}
}
