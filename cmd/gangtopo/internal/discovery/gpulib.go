package discovery

import (
	"errors"
	"fmt"
)

// ErrNoGPULib reports that this host has no usable GPU library (NVML not
// installed, driver not loaded, or a build without cgo). Discovery treats it
// as "no GPUs here", not as a failure.
var ErrNoGPULib = errors.New("no GPU library")

// GPULib is what discovery needs from a GPU management library. Init and
// Shutdown bracket one discovery; Init returns an error wrapping ErrNoGPULib
// when the library is absent.
type GPULib interface {
	Init() error
	Shutdown() error
	DriverVersion() (string, error)
	Devices() ([]GPUDevice, error)
}

// GPUDevice is one GPU as the library reports it. Facts the library cannot
// give on this driver (NUMA node, fabric, a topology level) come back as
// "unknown" values, not as errors; errors are real faults.
type GPUDevice interface {
	Info() (GPUInfo, error)
	// NVLinks lists the device's active NVLinks and what is at their far end.
	NVLinks() ([]NVLinkEnd, error)
	// Fabric reports the multi-node NVLink fabric the GPU is registered in.
	Fabric() (FabricInfo, error)
	// CommonAncestor is the PCIe level joining this GPU and other.
	CommonAncestor(other GPUDevice) (PCILevel, error)
}

// GPUInfo is the identity of one GPU.
type GPUInfo struct {
	Index     int    // NVML index (PCI bus order)
	Minor     int    // /dev/nvidia<Minor>; -1 when unknown
	UUID      string // GPU-...
	Name      string // marketing name, e.g. "NVIDIA H100 80GB HBM3"
	MemoryMiB int64
	PCIBusID  string // normalised: "0000:18:00.0"
	NUMA      int    // -1 when the library does not say
	MIG       MIGMode
}

// MIGMode is a GPU's Multi-Instance GPU mode.
type MIGMode string

// The MIG modes.
const (
	MIGUnsupported MIGMode = "unsupported"
	MIGDisabled    MIGMode = "disabled"
	MIGEnabled     MIGMode = "enabled"
	// MIGPending marks a mode change that takes effect at the next GPU reset.
	MIGPendingEnable  MIGMode = "disabled (enable pending)"
	MIGPendingDisable MIGMode = "enabled (disable pending)"
)

// RemoteKind is what sits at the far end of an NVLink.
type RemoteKind string

// The remote kinds NVML distinguishes.
const (
	RemoteGPU     RemoteKind = "gpu"
	RemoteSwitch  RemoteKind = "nvswitch"
	RemoteCPU     RemoteKind = "cpu" // IBM NPU (POWER9 CPU-GPU NVLink)
	RemoteUnknown RemoteKind = "unknown"
)

// NVLinkEnd is one active NVLink of a GPU.
type NVLinkEnd struct {
	Link        int        `json:"link"`
	Remote      RemoteKind `json:"remote"`
	RemoteBusID string     `json:"remote_pci_bus_id,omitempty"`
}

// FabricInfo is a GPU's registration in a multi-node NVLink fabric (GB200
// NVL72 and the like). GPUs with the same ClusterUUID and CliqueID share
// NVLink across nodes: they form one block.
type FabricInfo struct {
	Supported   bool   `json:"supported"`
	State       string `json:"state,omitempty"` // not-started, in-progress, completed
	Status      string `json:"status,omitempty"`
	ClusterUUID string `json:"cluster_uuid,omitempty"`
	CliqueID    uint32 `json:"clique_id,omitempty"`
}

// Domain is the fabric's block identity, or "" when the GPU is in no
// completed fabric.
func (f FabricInfo) Domain() string {
	if !f.Supported || f.State != "completed" || f.ClusterUUID == "" || f.Status != "" {
		return ""
	}
	return fmt.Sprintf("%s/%d", f.ClusterUUID, f.CliqueID)
}

// Null is the GPU library of a host without NVML or GPUs: Init always
// reports ErrNoGPULib with the reason, so discovery records a CPU-only node.
type Null struct{ Reason string }

// Init implements GPULib.
func (n Null) Init() error { return fmt.Errorf("%w: %s", ErrNoGPULib, n.Reason) }

// Shutdown implements GPULib.
func (Null) Shutdown() error { return nil }

// DriverVersion implements GPULib.
func (Null) DriverVersion() (string, error) { return "", nil }

// Devices implements GPULib.
func (Null) Devices() ([]GPUDevice, error) { return nil, nil }
