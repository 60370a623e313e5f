//go:build cgo

package discovery

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// DefaultGPULib is the real NVML (libnvidia-ml.so.1, loaded on Init).
func DefaultGPULib() GPULib { return NVML(nvml.New()) }

// NVML adapts a go-nvml library (the real one from nvml.New, or a mock
// server from go-nvml's pkg/nvml/mock) to GPULib. nvml.Return values become
// errors here, wrapped with %w so callers can still errors.Is them against
// nvml constants.
func NVML(lib nvml.Interface) GPULib { return &nvmlLib{lib: lib} }

type nvmlLib struct{ lib nvml.Interface }

type nvmlDevice struct {
	lib *nvmlLib
	dev nvml.Device
	// has records which optional NVML symbols the loaded driver exports.
	has map[string]bool
}

// Optional entry points: older drivers lack them, and calling a symbol the
// library does not export crashes, so they are looked up first.
var optionalSymbols = []string{
	"nvmlDeviceGetNumaNodeId",
	"nvmlDeviceGetGpuFabricInfo",
	"nvmlDeviceGetNvLinkRemoteDeviceType",
}

func nvmlErr(what string, ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return fmt.Errorf("NVML %s: %w", what, ret)
}

// Init implements GPULib.
func (l *nvmlLib) Init() error {
	ret := l.lib.Init()
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("%w: %w", ErrNoGPULib, nvmlErr("init", ret))
	}
	return nvmlErr("init", ret)
}

// Shutdown implements GPULib.
func (l *nvmlLib) Shutdown() error { return nvmlErr("shutdown", l.lib.Shutdown()) }

// DriverVersion implements GPULib.
func (l *nvmlLib) DriverVersion() (string, error) {
	v, ret := l.lib.SystemGetDriverVersion()
	return v, nvmlErr("driver version", ret)
}

// Devices implements GPULib.
func (l *nvmlLib) Devices() ([]GPUDevice, error) {
	n, ret := l.lib.DeviceGetCount()
	if err := nvmlErr("device count", ret); err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, s := range optionalSymbols {
		has[s] = l.lib.Extensions().LookupSymbol(s) == nil
	}
	out := make([]GPUDevice, 0, n)
	for i := 0; i < n; i++ {
		d, ret := l.lib.DeviceGetHandleByIndex(i)
		if err := nvmlErr(fmt.Sprintf("device %d handle", i), ret); err != nil {
			return nil, err
		}
		out = append(out, &nvmlDevice{lib: l, dev: d, has: has})
	}
	return out, nil
}

// Info implements GPUDevice.
func (d *nvmlDevice) Info() (GPUInfo, error) {
	var g GPUInfo
	var ret nvml.Return
	if g.Index, ret = d.dev.GetIndex(); ret != nvml.SUCCESS {
		return g, nvmlErr("index", ret)
	}
	if g.UUID, ret = d.dev.GetUUID(); ret != nvml.SUCCESS {
		return g, nvmlErr(fmt.Sprintf("GPU %d UUID", g.Index), ret)
	}
	if g.Name, ret = d.dev.GetName(); ret != nvml.SUCCESS {
		return g, nvmlErr(fmt.Sprintf("GPU %d name", g.Index), ret)
	}
	mem, ret := d.dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return g, nvmlErr(fmt.Sprintf("GPU %d memory", g.Index), ret)
	}
	g.MemoryMiB = int64(mem.Total >> 20)
	pci, ret := d.dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return g, nvmlErr(fmt.Sprintf("GPU %d PCI info", g.Index), ret)
	}
	g.PCIBusID = busID(pci)
	if g.Minor, ret = d.dev.GetMinorNumber(); ret != nvml.SUCCESS {
		g.Minor = -1
	}
	g.NUMA = d.numa()
	mig, err := d.migMode()
	if err != nil {
		return g, fmt.Errorf("GPU %d: %w", g.Index, err)
	}
	g.MIG = mig
	return g, nil
}

func (d *nvmlDevice) numa() int {
	if !d.has["nvmlDeviceGetNumaNodeId"] {
		return -1
	}
	n, ret := d.dev.GetNumaNodeId()
	if ret != nvml.SUCCESS {
		return -1
	}
	return n
}

func (d *nvmlDevice) migMode() (MIGMode, error) {
	cur, pending, ret := d.dev.GetMigMode()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return MIGUnsupported, nil
	case ret != nvml.SUCCESS:
		return "", nvmlErr("MIG mode", ret)
	case cur == nvml.DEVICE_MIG_ENABLE && pending == nvml.DEVICE_MIG_DISABLE:
		return MIGPendingDisable, nil
	case cur == nvml.DEVICE_MIG_ENABLE:
		return MIGEnabled, nil
	case pending == nvml.DEVICE_MIG_ENABLE:
		return MIGPendingEnable, nil
	}
	return MIGDisabled, nil
}

// busID reads a PciInfo's bus id string, or builds it from its numeric
// fields when the string is empty.
func busID(p nvml.PciInfo) string {
	var b []byte
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	if len(b) == 0 {
		return fmt.Sprintf("%04x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
	}
	return NormalizeBusID(string(b))
}

// NVLinks implements GPUDevice: it walks link numbers until NVML says the
// link does not exist, and reports the active ones.
func (d *nvmlDevice) NVLinks() ([]NVLinkEnd, error) {
	var out []NVLinkEnd
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		state, ret := d.dev.GetNvLinkState(l)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			break // no NVLink, or past the last link
		}
		if ret != nvml.SUCCESS {
			return nil, nvmlErr(fmt.Sprintf("NVLink %d state", l), ret)
		}
		if state != nvml.FEATURE_ENABLED {
			continue
		}
		e := NVLinkEnd{Link: l, Remote: RemoteUnknown}
		if pci, ret := d.dev.GetNvLinkRemotePciInfo(l); ret == nvml.SUCCESS {
			e.RemoteBusID = busID(pci)
		}
		if d.has["nvmlDeviceGetNvLinkRemoteDeviceType"] {
			t, ret := d.dev.GetNvLinkRemoteDeviceType(l)
			if ret == nvml.SUCCESS {
				e.Remote = remoteKind(t)
			}
		}
		if e.RemoteBusID == "0000:00:00.0" {
			e.RemoteBusID = "" // drivers that give no PCI id for an NVSwitch report zeros
		}
		out = append(out, e)
	}
	return out, nil
}

func remoteKind(t nvml.IntNvLinkDeviceType) RemoteKind {
	switch t {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return RemoteGPU
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return RemoteSwitch
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return RemoteCPU
	}
	return RemoteUnknown
}

// Fabric implements GPUDevice.
func (d *nvmlDevice) Fabric() (FabricInfo, error) {
	if !d.has["nvmlDeviceGetGpuFabricInfo"] {
		return FabricInfo{}, nil
	}
	f, ret := d.dev.GetGpuFabricInfo()
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return FabricInfo{}, nil
	}
	if ret != nvml.SUCCESS {
		return FabricInfo{}, nvmlErr("fabric info", ret)
	}
	info := FabricInfo{Supported: f.State != nvml.GPU_FABRIC_STATE_NOT_SUPPORTED, State: fabricState(f.State)}
	if st := nvml.Return(f.Status); st != nvml.SUCCESS && info.State == "completed" {
		info.Status = st.Error()
	}
	if f.ClusterUuid != [16]uint8{} {
		u := f.ClusterUuid
		info.ClusterUUID = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
		info.CliqueID = f.CliqueId
	}
	return info, nil
}

func fabricState(s uint8) string {
	switch s {
	case nvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		return "not-supported"
	case nvml.GPU_FABRIC_STATE_NOT_STARTED:
		return "not-started"
	case nvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return "in-progress"
	case nvml.GPU_FABRIC_STATE_COMPLETED:
		return "completed"
	}
	return fmt.Sprintf("state-%d", s)
}

// CommonAncestor implements GPUDevice.
func (d *nvmlDevice) CommonAncestor(other GPUDevice) (PCILevel, error) {
	o, ok := other.(*nvmlDevice)
	if !ok {
		return LevelUnknown, errors.New("NVML topology: the other GPU is not an NVML device")
	}
	lvl, ret := d.dev.GetTopologyCommonAncestor(o.dev)
	if ret == nvml.ERROR_NOT_SUPPORTED {
		return LevelUnknown, nil
	}
	if ret != nvml.SUCCESS {
		return LevelUnknown, nvmlErr("topology common ancestor", ret)
	}
	switch lvl {
	case nvml.TOPOLOGY_INTERNAL:
		return LevelBoard, nil
	case nvml.TOPOLOGY_SINGLE:
		return LevelPIX, nil
	case nvml.TOPOLOGY_MULTIPLE:
		return LevelPXB, nil
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return LevelPHB, nil
	case nvml.TOPOLOGY_NODE:
		return LevelNode, nil
	case nvml.TOPOLOGY_SYSTEM:
		return LevelSys, nil
	}
	return LevelUnknown, nil
}
