//go:build cgo

package discovery

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
)

// hw describes a node for go-nvml's mock servers. The dgxh100/dgxh200
// servers give GPU identity, memory and MIG; their NVLink, topology, NUMA
// and fabric calls are empty, so hw fills them in: which links each GPU
// has and what is at their far end, the NVML topology level of each pair,
// and each GPU's fabric registration.
type hw struct {
	base     func() *server.Server
	gpus     int
	name     string        // NVML device name; "" keeps the server's
	busIDs   []string      // per GPU
	numa     []int         // per GPU; nil: the driver has no NUMA call
	links    [][]NVLinkEnd // per GPU, its enabled links in link order
	maxLinks int           // links per GPU that exist (enabled or not)
	level    func(i, j int) nvml.GpuTopologyLevel
	fabric   func(i int) (nvml.GpuFabricInfo, nvml.Return)
	// missing lists optional NVML symbols the mock "driver" does not export.
	missing []string
}

// server builds the mock server and wires every call discovery makes.
func (h hw) server() *server.Server {
	s := h.base()
	s.Devices = s.Devices[:h.gpus]
	pos := map[nvml.Device]int{}
	for i, d := range s.Devices {
		pos[d] = i
	}
	s.LookupSymbolFunc = func(sym string) error {
		for _, m := range h.missing {
			if m == sym {
				return errors.New("undefined symbol " + sym)
			}
		}
		return nil
	}
	for i, nd := range s.Devices {
		h.wire(nd.(*server.Device), i, pos)
	}
	return s
}

func (h hw) wire(d *server.Device, i int, pos map[nvml.Device]int) {
	d.PciBusID = h.busIDs[i]
	d.UUID = fmt.Sprintf("GPU-%08d-0000-4000-8000-%012d", i, i)
	if h.name != "" {
		d.Config.Name = h.name
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(h.busIDs[i]), nvml.SUCCESS }
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		if h.numa == nil {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return h.numa[i], nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		switch {
		case l >= h.maxLinks:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		case l < len(h.links[i]):
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) { return pciInfo(h.links[i][l].RemoteBusID), nvml.SUCCESS }
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		switch h.links[i][l].Remote {
		case RemoteGPU:
			return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
		case RemoteSwitch:
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		case RemoteCPU:
			return nvml.NVLINK_DEVICE_TYPE_IBMNPU, nvml.SUCCESS
		}
		return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		return h.level(i, pos[o]), nvml.SUCCESS
	}
	d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		if h.fabric == nil {
			return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
		}
		return h.fabric(i)
	}
}

// pciInfo is what NVML returns for a bus id: the 8-digit-domain string.
func pciInfo(id string) nvml.PciInfo {
	var p nvml.PciInfo
	if id == "" {
		return p
	}
	var dom, bus, dev uint32
	fmt.Sscanf(id, "%x:%x:%x", &dom, &bus, &dev)
	p.Domain, p.Bus, p.Device = dom, bus, dev
	s := fmt.Sprintf("%08X:%02X:%02X.0", dom, bus, dev)
	for k := 0; k < len(s); k++ {
		p.BusId[k] = int8(s[k])
	}
	return p
}

// byNUMA is the topology level of a 2-socket box where GPUs with equal
// i/per share a socket, and same is the level inside a group of `group`.
func byNUMA(per, group int, same nvml.GpuTopologyLevel) func(i, j int) nvml.GpuTopologyLevel {
	return func(i, j int) nvml.GpuTopologyLevel {
		switch {
		case i/group == j/group:
			return same
		case i/per == j/per:
			return nvml.TOPOLOGY_NODE
		}
		return nvml.TOPOLOGY_SYSTEM
	}
}

// ibHostBusIDs are the GPU bus ids of testdata/sysfs/ib-host: GPU i on
// 0000:<i+1>3:00.0, each behind its own switch with an HCA.
var ibHostBusIDs = []string{"0000:13:00.0", "0000:23:00.0", "0000:33:00.0", "0000:43:00.0", "0000:53:00.0", "0000:63:00.0", "0000:73:00.0", "0000:83:00.0"}

// roceHostBusIDs are the GPU bus ids of testdata/sysfs/roce-host: pairs
// behind switches 2x, 3x, ax, bx.
var roceHostBusIDs = []string{"0000:23:00.0", "0000:24:00.0", "0000:33:00.0", "0000:34:00.0", "0000:a3:00.0", "0000:a4:00.0", "0000:b3:00.0", "0000:b4:00.0"}

// nvswitchLinks gives every GPU n links into the NVSwitch fabric, spread
// over four switches as on HGX H100 (5, 4, 4, 5).
func nvswitchLinks(gpus, n int) [][]NVLinkEnd {
	sw := []string{"0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"}
	out := make([][]NVLinkEnd, gpus)
	for i := range out {
		for l := 0; l < n; l++ {
			out[i] = append(out[i], NVLinkEnd{Link: l, Remote: RemoteSwitch, RemoteBusID: sw[min(l*4/n, 3)]})
		}
	}
	return out
}

// directLinks turns a link-count matrix into per-GPU GPU-to-GPU links.
func directLinks(m [][]int, busIDs []string) [][]NVLinkEnd {
	out := make([][]NVLinkEnd, len(m))
	for i := range m {
		for j, n := range m[i] {
			for k := 0; k < n && i != j; k++ {
				out[i] = append(out[i], NVLinkEnd{Link: len(out[i]), Remote: RemoteGPU, RemoteBusID: busIDs[j]})
			}
		}
	}
	return out
}

// dgxH100 is an HGX H100 board: 18 NVSwitch links per GPU, every GPU alone
// behind its PCIe switch (NODE within a socket, SYS across).
func dgxH100() hw {
	return hw{
		base: dgxh100.New, gpus: 8, busIDs: ibHostBusIDs, numa: []int{0, 0, 0, 0, 1, 1, 1, 1},
		links: nvswitchLinks(8, 18), maxLinks: 18, level: byNUMA(4, 1, nvml.TOPOLOGY_NODE),
	}
}

// dgxH200 is the same board with H200s, from the dgxh200 mock.
func dgxH200() hw {
	h := dgxH100()
	h.base = dgxh200.New
	return h
}

// dgx1 is a DGX-1V: V100s in the hybrid cube mesh of topotest.DGX1Links,
// GPU pairs behind PLX switches (PIX), six links per GPU.
func dgx1() hw {
	return hw{
		base: dgxh100.New, gpus: 8, name: "Tesla V100-SXM2-32GB", busIDs: roceHostBusIDs, numa: []int{0, 0, 0, 0, 1, 1, 1, 1},
		links: directLinks(topotest.DGX1Links, roceHostBusIDs), maxLinks: 6, level: byNUMA(4, 2, nvml.TOPOLOGY_SINGLE),
	}
}

// bridged is a PCIe box with 8 A40s joined in pairs by NVLink bridges
// (4 links each), pairs behind one PCIe switch each.
func bridged() hw {
	return hw{
		base: dgxh100.New, gpus: 8, name: "NVIDIA A40", busIDs: roceHostBusIDs, numa: []int{0, 0, 0, 0, 1, 1, 1, 1},
		links: directLinks(topotest.Pairs(8, 4), roceHostBusIDs), maxLinks: 4, level: byNUMA(4, 2, nvml.TOPOLOGY_SINGLE),
	}
}

// gb200 is one GB200 NVL72 compute tray: 4 GPUs with 18 links each into the
// rack's NVSwitch trays, registered in fabric clique `clique` of one
// cluster. Its driver answers NOT_SUPPORTED for the NUMA node, so discovery
// reads it from sysfs.
func gb200(clique uint32) hw {
	return hw{
		base: dgxh100.New, gpus: 4, name: "NVIDIA GB200", busIDs: ibHostBusIDs[:4],
		links: nvswitchLinks(4, 18), maxLinks: 18, level: byNUMA(2, 1, nvml.TOPOLOGY_NODE),
		fabric: func(int) (nvml.GpuFabricInfo, nvml.Return) { return fabricInfo(clique), nvml.SUCCESS },
	}
}

func fabricInfo(clique uint32) nvml.GpuFabricInfo {
	return nvml.GpuFabricInfo{
		ClusterUuid: [16]uint8{0x8e, 0x5a, 0x1c, 0x04, 0x11, 0x22, 0x43, 0x33, 0x84, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa},
		Status:      uint32(nvml.SUCCESS), CliqueId: clique, State: nvml.GPU_FABRIC_STATE_COMPLETED,
	}
}
