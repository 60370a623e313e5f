//go:build cgo

package discovery

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"

	"github.com/gangtopo/gangtopo/selector/topology/topotest"
	"github.com/gangtopo/gangtopo/spank/nodefile"
	"github.com/gangtopo/gangtopo/tests/tools/golden"
)

var fixedTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func sysfsTree(name string) string { return filepath.Join("testdata", "sysfs", name) }

// summary is what each discovery case checks by hand; the golden node map
// covers the rest of the format.
type summary struct {
	Source   string
	Models   []string
	Links    [][]int
	Mode     string
	NUMA     []int
	Switch   []int
	Nearest  [][]string // per GPU, the nearest physical NICs
	NodeFile []string   // the node file's nvlink and nic lines
	Fabric   string
	MIG      []MIGMode
	Warnings []string // substrings, one per expected warning
}

func summarize(t *testing.T, m *NodeMap) summary {
	t.Helper()
	s := summary{Source: m.GPUSource, Links: m.NVLink.Links, Mode: m.NVLink.Mode}
	for _, g := range m.GPUs {
		s.Models = append(s.Models, g.Model)
		s.NUMA = append(s.NUMA, g.NUMA)
		s.Switch = append(s.Switch, g.PCIeSwitch)
		s.MIG = append(s.MIG, g.MIG)
		var near []string
		for _, n := range g.NearestNIC {
			near = append(near, n.Name)
		}
		s.Nearest = append(s.Nearest, near)
	}
	text := BuildNodeFile(m, nil).RenderWithComment(NodeFileComment)
	if _, err := nodefile.Parse(text); err != nil {
		t.Fatalf("node file does not parse: %v", err)
	}
	for _, l := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(l, "nvlink ") || strings.HasPrefix(l, "nic ") {
			s.NodeFile = append(s.NodeFile, l)
		}
	}
	if m.Fabric != nil {
		s.Fabric = m.Fabric.Domain()
	}
	s.Warnings = m.Warnings
	return s
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestDiscover(t *testing.T) {
	oldDriver := dgxH100()
	oldDriver.missing = []string{"nvmlDeviceGetNvLinkRemoteDeviceType", "nvmlDeviceGetNumaNodeId"}
	halfFabric := gb200(3)
	halfFabric.fabric = func(i int) (nvml.GpuFabricInfo, nvml.Return) {
		f := fabricInfo(3)
		if i == 2 {
			f.State = nvml.GPU_FABRIC_STATE_IN_PROGRESS
		}
		return f, nvml.SUCCESS
	}
	// mlx5_3's port is down: GPU 3 is served by the other NICs of its
	// NUMA node (NODE level), and mlx5_3 is left out; mlx5_8 is a VF.
	ibNICs := []string{"nic mlx5_0 0,3", "nic mlx5_1 1,3", "nic mlx5_2 2-3", "nic mlx5_4 4", "nic mlx5_5 5", "nic mlx5_6 6", "nic mlx5_7 7"}
	ibFile := append([]string{"nvlink node1/nvl0 0-7"}, ibNICs...)
	ibNearest := [][]string{{"mlx5_0"}, {"mlx5_1"}, {"mlx5_2"}, {"mlx5_3"}, {"mlx5_4"}, {"mlx5_5"}, {"mlx5_6"}, {"mlx5_7"}}
	// roce-host: mlx5_0 behind switch 0 (GPUs 0-1), mlx5_1 behind switch 2
	// (GPUs 4-5); GPUs 2-3 and 6-7 reach their socket's NIC through the CPU.
	roceNearest := [][]string{{"mlx5_0"}, {"mlx5_0"}, {"mlx5_0"}, {"mlx5_0"}, {"mlx5_1"}, {"mlx5_1"}, {"mlx5_1"}, {"mlx5_1"}}
	// A tray has GPUs 0-3 of ib-host, all on NUMA 0: mlx5_4-7 serve none.
	trayFile := []string{"nvlink node1/nvl0 0-3", "nic mlx5_0 0,3", "nic mlx5_1 1,3", "nic mlx5_2 2-3", "nic mlx5_4", "nic mlx5_5", "nic mlx5_6", "nic mlx5_7"}
	sockets := []int{0, 0, 0, 0, 1, 1, 1, 1}
	tests := []struct {
		name   string
		golden string // testdata/nodemaps/<golden>.json; "" for none
		hw     hw
		sysfs  string
		setup  func(s *server.Server)
		want   summary
	}{{
		name: "DGX H100: NVSwitch gives every pair 18 links", golden: "dgx-h100",
		hw: dgxH100(), sysfs: "ib-host",
		want: summary{Source: "nvml", Models: repeat("h100", 8), Links: topotest.FullMesh(8, 18), Mode: "nvswitch",
			NUMA: sockets, Switch: []int{0, 1, 2, 3, 4, 5, 6, 7}, Nearest: ibNearest, NodeFile: ibFile,
			MIG: repeat(MIGDisabled, 8)},
	}, {
		name: "DGX H200 server from the dgxh200 mock",
		hw:   dgxH200(), sysfs: "ib-host",
		want: summary{Source: "nvml", Models: repeat("h200", 8), Links: topotest.FullMesh(8, 18), Mode: "nvswitch",
			NUMA: sockets, Switch: []int{0, 1, 2, 3, 4, 5, 6, 7}, Nearest: ibNearest, NodeFile: ibFile,
			MIG: repeat(MIGDisabled, 8)},
	}, {
		name: "MIG enabled on GPU 2 and pending on GPU 5",
		hw:   dgxH100(), sysfs: "ib-host",
		setup: func(s *server.Server) {
			s.Devices[2].(*server.Device).MigMode = nvml.DEVICE_MIG_ENABLE
			d := s.Devices[5].(*server.Device)
			d.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
		},
		want: summary{Source: "nvml", Models: repeat("h100", 8), Links: topotest.FullMesh(8, 18), Mode: "nvswitch",
			NUMA: sockets, Switch: []int{0, 1, 2, 3, 4, 5, 6, 7}, Nearest: ibNearest, NodeFile: ibFile,
			MIG: []MIGMode{MIGDisabled, MIGDisabled, MIGEnabled, MIGDisabled, MIGDisabled, MIGPendingEnable, MIGDisabled, MIGDisabled}},
	}, {
		name: "device minor differs from the PCI-order index",
		hw:   dgxH100(), sysfs: "ib-host",
		setup: func(s *server.Server) { s.Devices[1].(*server.Device).Minor = 5 },
		want: summary{Source: "nvml", Models: repeat("h100", 8), Links: topotest.FullMesh(8, 18), Mode: "nvswitch",
			NUMA: sockets, Switch: []int{0, 1, 2, 3, 4, 5, 6, 7}, Nearest: ibNearest, NodeFile: ibFile,
			MIG: repeat(MIGDisabled, 8), Warnings: []string{"GPU 1 (PCI order) is /dev/nvidia5"}},
	}, {
		// Without the remote-type call the switch's PCI id matches no GPU:
		// the links are reported, not guessed. NUMA comes from sysfs.
		name: "old driver: NVSwitch links unresolved, NUMA from sysfs",
		hw:   oldDriver, sysfs: "ib-host",
		want: summary{Source: "nvml", Models: repeat("h100", 8), Links: topotest.FullMesh(8, 0), Mode: "none",
			NUMA: sockets, Switch: []int{0, 1, 2, 3, 4, 5, 6, 7}, Nearest: ibNearest,
			NodeFile: append([]string{"nvlink node1/nvl0 0", "nvlink node1/nvl1 1", "nvlink node1/nvl2 2", "nvlink node1/nvl3 3",
				"nvlink node1/nvl4 4", "nvlink node1/nvl5 5", "nvlink node1/nvl6 6", "nvlink node1/nvl7 7"}, ibNICs...),
			MIG: repeat(MIGDisabled, 8), Warnings: repeat("18 NVLinks end at neither a GPU", 8)},
	}, {
		name: "DGX-1 hybrid cube mesh: direct GPU links counted per pair", golden: "dgx1",
		hw: dgx1(), sysfs: "roce-host",
		want: summary{Source: "nvml", Models: repeat("v100", 8), Links: topotest.DGX1Links, Mode: "direct",
			NUMA: sockets, Switch: []int{0, 0, 1, 1, 2, 2, 3, 3}, Nearest: roceNearest,
			NodeFile: []string{"nvlink node1/nvl0 0-7", "nic mlx5_0 0-3", "nic mlx5_1 4-7"},
			MIG:      repeat(MIGDisabled, 8)},
	}, {
		// no-nic has no GPU devices in sysfs: switches come from NVML's PIX pairs.
		name: "NVLink-bridged pairs, switches from NVML levels, no NICs", golden: "bridged",
		hw: bridged(), sysfs: "no-nic",
		want: summary{Source: "nvml", Models: repeat("a40", 8), Links: topotest.Pairs(8, 4), Mode: "direct",
			NUMA: sockets, Switch: []int{0, 0, 1, 1, 2, 2, 3, 3}, Nearest: make([][]string, 8),
			NodeFile: []string{"nvlink node1/nvl0 0-1", "nvlink node1/nvl1 2-3", "nvlink node1/nvl2 4-5", "nvlink node1/nvl3 6-7"},
			MIG:      repeat(MIGDisabled, 8)},
	}, {
		name: "GB200 tray: fabric clique defines the block", golden: "gb200",
		hw: gb200(3), sysfs: "ib-host",
		want: summary{Source: "nvml", Models: repeat("gb200", 4), Links: topotest.FullMesh(4, 18), Mode: "nvswitch",
			NUMA: []int{0, 0, 0, 0}, Switch: []int{0, 1, 2, 3}, Nearest: ibNearest[:4],
			NodeFile: trayFile,
			Fabric:   "8e5a1c04-1122-4333-8444-5566778899aa/3", MIG: repeat(MIGDisabled, 4)},
	}, {
		name: "GB200 tray with one GPU still registering: no block",
		hw:   halfFabric, sysfs: "ib-host",
		want: summary{Source: "nvml", Models: repeat("gb200", 4), Links: topotest.FullMesh(4, 18), Mode: "nvswitch",
			NUMA: []int{0, 0, 0, 0}, Switch: []int{0, 1, 2, 3}, Nearest: ibNearest[:4],
			NodeFile: trayFile,
			MIG:      repeat(MIGDisabled, 4), Warnings: []string{"GPUs disagree on their NVLink fabric"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.hw.server()
			if tc.setup != nil {
				tc.setup(s)
			}
			m, err := Discover(WithGPULib(NVML(s)), WithSysfs(sysfsTree(tc.sysfs)), WithNodeName("node1"), WithClock(func() time.Time { return fixedTime }))
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			got := summarize(t, m)
			want := tc.want
			got.Warnings = matchWarnings(got.Warnings, want.Warnings)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("discovery (-want +got):\n%s", diff)
			}
			if tc.golden != "" {
				checkGolden(t, m, tc.golden)
			}
		})
	}
}

// matchWarnings replaces each warning that contains the wanted substring
// at the same position by that substring, so a summary compares warnings
// by their gist.
func matchWarnings(got, want []string) []string {
	out := append([]string(nil), got...)
	for i := range out {
		if i < len(want) && strings.Contains(out[i], want[i]) {
			out[i] = want[i]
		}
	}
	return out
}

func checkGolden(t *testing.T, m *NodeMap, name string) {
	t.Helper()
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "nodemaps", name+".json")
	golden.Check(t, path, buf.Bytes())
	back, err := DecodeNodeMap(bytes.NewReader(buf.Bytes()), path)
	if err != nil {
		t.Fatalf("the node map does not decode: %v", err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("decode(encode(m)) differs (-want +got):\n%s", diff)
	}
}

func TestDiscoverCPUOnly(t *testing.T) {
	noLib := dgxH100().server()
	noLib.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	noDriver := dgxH100().server()
	noDriver.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	noGPUs := dgxH100().server()
	noGPUs.Devices = nil
	tests := []struct {
		name   string
		lib    GPULib
		reason string
	}{
		{"null library", Null{Reason: "--no-gpus given"}, "no GPU library: --no-gpus given"},
		{"NVML library missing", NVML(noLib), "no GPU library: NVML init: ERROR_LIBRARY_NOT_FOUND"},
		{"driver not loaded", NVML(noDriver), "no GPU library: NVML init: ERROR_DRIVER_NOT_LOADED"},
		{"NVML sees no GPUs", NVML(noGPUs), "the GPU library reports no GPUs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Discover(WithGPULib(tc.lib), WithSysfs(sysfsTree("no-nic")), WithNodeName("cpu1"), WithClock(func() time.Time { return fixedTime }))
			if err != nil {
				t.Fatalf("a CPU-only host is not an error: %v", err)
			}
			// 32 CPUs, 128000 MiB (131072000 kB >> 10) on one NUMA node.
			want := struct {
				Source, Reason string
				CPUOnly        bool
				CPUs           int
				Mem            int64
				NodeFile       string
			}{"none", tc.reason, true, 32, 131072000 >> 10, "# gangtopo node file, written by gangtopo daemon --role node; read by spank_gangtopo.so\n" + nodefile.Header + "\nnode cpu1\n"}
			got := want
			got.Source, got.Reason, got.CPUOnly = m.GPUSource, m.NoGPUReason, m.CPUOnly()
			got.CPUs, got.Mem, got.NodeFile = m.Host.CPUs, m.Host.MemoryMiB, string(BuildNodeFile(m, nil).RenderWithComment(NodeFileComment))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if tc.name == "null library" {
				checkGolden(t, m, "cpu-only")
			}
		})
	}
}

func TestDiscoverNVMLFaults(t *testing.T) {
	initFails := dgxH100().server()
	initFails.InitFunc = func() nvml.Return { return nvml.ERROR_UNKNOWN }
	lost := dgxH100().server()
	lost.Devices[4].(*server.Device).GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	tests := []struct {
		name string
		lib  GPULib
		want nvml.Return
		msg  string
	}{
		{"init fails", NVML(initFails), nvml.ERROR_UNKNOWN, "GPU discovery: NVML init: ERROR_UNKNOWN"},
		{"GPU lost mid-discovery", NVML(lost), nvml.ERROR_GPU_IS_LOST, "GPU discovery: GPU 4: NVML NVLink 0 state: ERROR_GPU_IS_LOST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Discover(WithGPULib(tc.lib), WithSysfs(sysfsTree("ib-host")), WithNodeName("n"))
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("errors.Is(%v, %v) = false; the nvml.Return must stay wrapped", err, tc.want)
			}
			if err.Error() != tc.msg {
				t.Errorf("error = %q, want %q", err, tc.msg)
			}
		})
	}
}

func TestWriteTopoMatrix(t *testing.T) {
	m, err := Discover(WithGPULib(NVML(dgx1().server())), WithSysfs(sysfsTree("roce-host")), WithNodeName("v100"), WithClock(func() time.Time { return fixedTime }))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTopoMatrix(&b, m); err != nil {
		t.Fatal(err)
	}
	// The hybrid cube mesh as nvidia-smi prints it for a DGX-1V, with the
	// PLX pairs (PIX) where no NVLink joins two GPUs.
	want := `     GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7 NIC0 NIC1 CPU Affinity NUMA Affinity
GPU0 X    NV1  NV1  NV2  NV2  SYS  SYS  SYS  PIX  SYS  0-47         0
GPU1 NV1  X    NV2  NV1  SYS  NV2  SYS  SYS  PIX  SYS  0-47         0
GPU2 NV1  NV2  X    NV2  SYS  SYS  NV1  SYS  NODE SYS  0-47         0
GPU3 NV2  NV1  NV2  X    SYS  SYS  SYS  NV1  NODE SYS  0-47         0
GPU4 NV2  SYS  SYS  SYS  X    NV1  NV1  NV2  SYS  PIX  48-95        1
GPU5 SYS  NV2  SYS  SYS  NV1  X    NV2  NV1  SYS  PIX  48-95        1
GPU6 SYS  SYS  NV1  SYS  NV1  NV2  X    NV2  SYS  NODE 48-95        1
GPU7 SYS  SYS  SYS  NV1  NV2  NV1  NV2  X    SYS  NODE 48-95        1
NIC0 PIX  PIX  NODE NODE SYS  SYS  SYS  SYS  X    SYS
NIC1 SYS  SYS  SYS  SYS  PIX  PIX  NODE NODE SYS  X

NIC Legend:
  NIC0: mlx5_0
  NIC1: mlx5_1

nvlink mode: direct; X = self, NV# = # NVLinks, PIX/PXB/PHB/NODE/SYS as in nvidia-smi topo -m
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
