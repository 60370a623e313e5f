package topotest

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// DGXH100 is an HGX/DGX H100: 8 H100 80GB on NVSwitch (18 NVLinks between
// every pair), GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1, each GPU behind its own
// PCIe switch with one ConnectX-7 400G InfiniBand NIC.
func DGXH100(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "dgx-h100", CPUs: 224, MemoryMiB: 2 << 20, Weight: 1}
	for i := 0; i < 8; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "h100", MemoryMiB: 81559, NUMA: i / 4, PCIeSwitch: i,
			PCIBusID: fmt.Sprintf("0000:%02x:00.0", []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}[i])})
		n.NICs = append(n.NICs, topology.NICSpec{Name: fmt.Sprintf("mlx5_%d", i), NUMA: i / 4, PCIeSwitch: i,
			LinkLayer: "InfiniBand", RateGbps: 400})
	}
	n.Links = FullMesh(8, 18)
	return n
}

// DGXA100 is a DGX A100 80GB: NVSwitch with 12 links per pair, GPUs in
// pairs behind four PCIe switches, each switch with two 200G HDR NICs.
func DGXA100(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "dgx-a100", CPUs: 256, MemoryMiB: 2 << 20, Weight: 1}
	numa := []int{3, 3, 1, 1, 7, 7, 5, 5}
	for i := 0; i < 8; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "a100-80g", MemoryMiB: 81920, NUMA: numa[i], PCIeSwitch: i / 2})
		n.NICs = append(n.NICs, topology.NICSpec{Name: fmt.Sprintf("mlx5_%d", i), NUMA: numa[i], PCIeSwitch: i / 2,
			LinkLayer: "InfiniBand", RateGbps: 200})
	}
	n.Links = FullMesh(8, 12)
	return n
}

// DGX1Links is the NVLink matrix of a DGX-1V (V100) hybrid cube mesh, as
// `nvidia-smi topo -m` reports it (NV1 -> 1, NV2 -> 2). Every GPU has six
// links; GPUs 0-3 and 4-7 are fully connected quads, joined by one link per
// GPU across the quads.
var DGX1Links = [][]int{
	{0, 1, 1, 2, 2, 0, 0, 0},
	{1, 0, 2, 1, 0, 2, 0, 0},
	{1, 2, 0, 2, 0, 0, 1, 0},
	{2, 1, 2, 0, 0, 0, 0, 1},
	{2, 0, 0, 0, 0, 1, 1, 2},
	{0, 2, 0, 0, 1, 0, 2, 1},
	{0, 0, 1, 0, 1, 2, 0, 2},
	{0, 0, 0, 1, 2, 1, 2, 0},
}

// DGX1 is a DGX-1V: 8 V100 in a hybrid cube mesh, GPUs 0-3 on socket 0 and
// 4-7 on socket 1, pairs behind four PLX switches, one 100G EDR NIC each.
func DGX1(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "dgx-1v", CPUs: 80, MemoryMiB: 512 << 10, Weight: 1}
	for i := 0; i < 8; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "v100", MemoryMiB: 32768, NUMA: i / 4, PCIeSwitch: i / 2})
	}
	for s := 0; s < 4; s++ {
		n.NICs = append(n.NICs, topology.NICSpec{Name: fmt.Sprintf("mlx5_%d", s), NUMA: s / 2, PCIeSwitch: s,
			LinkLayer: "InfiniBand", RateGbps: 100})
	}
	n.Links = copyMatrix(DGX1Links)
	return n
}

// PCIeFourGPU is a single-socket workstation-class server with 4 GPUs joined
// in pairs by NVLink bridges (0-1, 2-3; 4 links each) and no PCIe switch.
func PCIeFourGPU(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "pcie-4", CPUs: 64, MemoryMiB: 512 << 10, Weight: 1}
	for i := 0; i < 4; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "a6000", MemoryMiB: 49140, NUMA: 0, PCIeSwitch: -1})
	}
	n.NICs = []topology.NICSpec{{Name: "mlx5_0", NUMA: 0, PCIeSwitch: -1, LinkLayer: "Ethernet", RateGbps: 100}}
	n.Links = Pairs(4, 4)
	return n
}

// PCIeEightGPU is a 2-socket server with 8 A40 joined in bridged pairs
// (0-1, 2-3, 4-5, 6-7), GPUs 0-3 on socket 0, pairs behind four PCIe
// switches, one RoCE NIC per socket.
func PCIeEightGPU(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "pcie-8-bridged", CPUs: 96, MemoryMiB: 1 << 20, Weight: 1}
	for i := 0; i < 8; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "a40", MemoryMiB: 46068, NUMA: i / 4, PCIeSwitch: i / 2})
	}
	n.NICs = []topology.NICSpec{
		{Name: "mlx5_0", NUMA: 0, PCIeSwitch: 0, LinkLayer: "Ethernet", RateGbps: 200},
		{Name: "mlx5_1", NUMA: 1, PCIeSwitch: 2, LinkLayer: "Ethernet", RateGbps: 200},
	}
	n.Links = Pairs(8, 4)
	return n
}

// PCIeTwoSocket is a 2-socket server with 8 L40S and no NVLink at all:
// GPUs 0-3 on socket 0 (pairs behind switches 0 and 1), 4-7 on socket 1.
// Only PCIe locality tells good sets from bad ones.
func PCIeTwoSocket(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "pcie-2s", CPUs: 128, MemoryMiB: 1 << 20, Weight: 1}
	for i := 0; i < 8; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "l40s", MemoryMiB: 46068, NUMA: i / 4, PCIeSwitch: i / 2})
	}
	n.NICs = []topology.NICSpec{
		{Name: "mlx5_0", NUMA: 0, PCIeSwitch: 0, LinkLayer: "InfiniBand", RateGbps: 200},
		{Name: "mlx5_1", NUMA: 1, PCIeSwitch: 3, LinkLayer: "InfiniBand", RateGbps: 200},
	}
	return n
}

// GB200Tray is one compute tray of a GB200 NVL72 rack: 4 B200 GPUs; the
// rack's NVSwitches join all 72 GPUs, so inside the node every pair has 18
// links and the block carries the NVLink domain across nodes.
func GB200Tray(name string) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: "gb200-tray", CPUs: 144, MemoryMiB: 960 << 10, Weight: 1}
	for i := 0; i < 4; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: "b200", MemoryMiB: 189471, NUMA: i / 2, PCIeSwitch: i})
		n.NICs = append(n.NICs, topology.NICSpec{Name: fmt.Sprintf("mlx5_%d", i), NUMA: i / 2, PCIeSwitch: i,
			LinkLayer: "InfiniBand", RateGbps: 400})
	}
	n.Links = FullMesh(4, 18)
	return n
}

// SmallGPUNode is a node with k GPUs of a model and no NVLink, for
// heterogeneous clusters (1, 2 and 4-GPU inference boxes).
func SmallGPUNode(name, model string, k int) topology.NodeSpec {
	n := topology.NodeSpec{Name: name, Hardware: fmt.Sprintf("%s-x%d", model, k), CPUs: 16 * k, MemoryMiB: int64(k) * 128 << 10, Weight: 1}
	for i := 0; i < k; i++ {
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: model, MemoryMiB: 24576, NUMA: 0, PCIeSwitch: -1})
	}
	return n
}

// FullMesh is an all-to-all link matrix with links per pair (NVSwitch).
func FullMesh(k, links int) [][]int {
	m := make([][]int, k)
	for i := range m {
		m[i] = make([]int, k)
		for j := range m[i] {
			if i != j {
				m[i][j] = links
			}
		}
	}
	return m
}

// Pairs links GPUs 2i and 2i+1 with the given number of links (bridges).
func Pairs(k, links int) [][]int {
	m := FullMesh(k, 0)
	for i := 0; i+1 < k; i += 2 {
		m[i][i+1], m[i+1][i] = links, links
	}
	return m
}

func copyMatrix(m [][]int) [][]int {
	out := make([][]int, len(m))
	for i := range m {
		out[i] = append([]int(nil), m[i]...)
	}
	return out
}
