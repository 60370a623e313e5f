package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// NodeMapVersion is the node map format this package writes and reads
// (docs/node-map.md).
const NodeMapVersion = "v1"

// MaxNodeMapBytes bounds what DecodeNodeMap reads.
const MaxNodeMapBytes = 16 << 20

// GPU sources: where the GPU facts came from.
const (
	SourceNVML = "nvml"
	SourceNone = "none" // no GPU library, or it reports no GPUs: a CPU-only node
)

// NodeMap is everything discovery found on one node. It is the JSON file the
// node daemon publishes; `gangtopo topology build` merges many of them.
type NodeMap struct {
	Version string    `json:"version"`
	Node    string    `json:"node"`
	Time    time.Time `json:"time"`
	// Gangtopo is the version of the gangtopo that wrote the map.
	Gangtopo string `json:"gangtopo_version,omitempty"`
	Host     Host   `json:"host"`
	// GPUSource is "nvml", or "none" on a CPU-only node, with NoGPUReason
	// saying why (no NVML library, driver not loaded, no GPUs).
	GPUSource     string `json:"gpu_source"`
	NoGPUReason   string `json:"no_gpu_reason,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	GPUs          []GPU  `json:"gpus"`
	NVLink        NVLink `json:"nvlink"`
	// PCIe[i][j] is the PCIe level between GPUs i and j ("X" on the diagonal).
	PCIe [][]PCILevel `json:"pcie"`
	// NICPCIe[i][n] is the level between GPU i and NICs[n].
	NICPCIe [][]PCILevel `json:"nic_pcie"`
	// Fabric is the node's multi-node NVLink domain, when all its GPUs are in
	// the same completed fabric clique.
	Fabric   *NodeFabric `json:"fabric,omitempty"`
	NICs     []NIC       `json:"nics"`
	Warnings []string    `json:"warnings,omitempty"`
}

// GPU is one GPU of a node map. Positions in NodeMap.GPUs follow the NVML
// index.
type GPU struct {
	Index      int           `json:"index"`
	Minor      int           `json:"minor"`
	UUID       string        `json:"uuid"`
	Name       string        `json:"name"`  // as NVML reports it
	Model      string        `json:"model"` // short form for GRES types: "h100"
	MemoryMiB  int64         `json:"memory_mib"`
	PCIBusID   string        `json:"pci_bus_id"`
	PCIPath    PCIPath       `json:"pci_path,omitempty"`
	NUMA       int           `json:"numa"`
	PCIeSwitch int           `json:"pcie_switch"`
	MIG        MIGMode       `json:"mig"`
	NVLinks    []NVLinkGroup `json:"nvlinks,omitempty"`
	Fabric     FabricInfo    `json:"fabric"`
	NearestNIC []NICAtLevel  `json:"nearest_nics,omitempty"`
}

// NVLinkGroup counts a GPU's active NVLinks that end at one remote device.
type NVLinkGroup struct {
	Remote      RemoteKind `json:"remote"`
	RemoteBusID string     `json:"remote_pci_bus_id,omitempty"`
	Links       int        `json:"links"`
}

// NICAtLevel names a NIC and how far it is.
type NICAtLevel struct {
	Name  string   `json:"name"`
	Level PCILevel `json:"level"`
}

// NVLink is the node's NVLink summary.
type NVLink struct {
	// Mode is none, nvswitch, direct or mixed (see resolveNVLinks).
	Mode string `json:"mode"`
	// Links[i][j] is the NVLink count between GPUs i and j.
	Links [][]int `json:"links"`
}

// NodeFabric is the multi-node NVLink domain a node belongs to.
type NodeFabric struct {
	ClusterUUID string `json:"cluster_uuid"`
	CliqueID    uint32 `json:"clique_id"`
}

// Domain is the block identity shared by all nodes of the fabric clique.
func (f *NodeFabric) Domain() string { return fmt.Sprintf("%s/%d", f.ClusterUUID, f.CliqueID) }

// CPUOnly reports whether the node has no GPUs.
func (m *NodeMap) CPUOnly() bool { return len(m.GPUs) == 0 }

// Encode writes the map as indented JSON (arrays of scalars on one line).
func (m *NodeMap) Encode(w io.Writer) error {
	compact, err := json.Marshal(m)
	if err != nil {
		return err
	}
	out, err := indentJSON(compact)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// DecodeNodeMap reads a node map strictly: unknown keys, a missing or
// foreign version and inconsistent sizes are errors naming the input.
func DecodeNodeMap(r io.Reader, name string) (*NodeMap, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxNodeMapBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxNodeMapBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes; not a node map", name, MaxNodeMapBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m NodeMap
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the node map", name)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}

func (m *NodeMap) check() error {
	var errs []error
	if m.Version != NodeMapVersion {
		errs = append(errs, fmt.Errorf("version: %q is not supported (this gangtopo reads %s)", m.Version, NodeMapVersion))
	}
	if m.Node == "" {
		errs = append(errs, errors.New("node: missing"))
	}
	k := len(m.GPUs)
	for i, g := range m.GPUs {
		if g.Model == "" {
			errs = append(errs, fmt.Errorf("gpus[%d].model: missing", i))
		}
	}
	if err := checkSquare("nvlink.links", len(m.NVLink.Links), k, func(i int) int { return len(m.NVLink.Links[i]) }); err != nil {
		errs = append(errs, err)
	}
	if err := checkSquare("pcie", len(m.PCIe), k, func(i int) int { return len(m.PCIe[i]) }); err != nil {
		errs = append(errs, err)
	}
	if len(m.NICPCIe) != k {
		errs = append(errs, fmt.Errorf("nic_pcie: %d rows, want one per GPU (%d)", len(m.NICPCIe), k))
	} else {
		for i, row := range m.NICPCIe {
			if len(row) != len(m.NICs) {
				errs = append(errs, fmt.Errorf("nic_pcie[%d]: %d entries, want one per NIC (%d)", i, len(row), len(m.NICs)))
			}
		}
	}
	for i := range m.NVLink.Links {
		for j := range m.NVLink.Links[i] {
			if i < k && j < k && m.NVLink.Links[i][j] != m.NVLink.Links[j][i] {
				errs = append(errs, fmt.Errorf("nvlink.links: [%d][%d] = %d but [%d][%d] = %d", i, j, m.NVLink.Links[i][j], j, i, m.NVLink.Links[j][i]))
			}
		}
	}
	return errors.Join(errs...)
}

func checkSquare(field string, rows, k int, rowLen func(int) int) error {
	if rows != k {
		return fmt.Errorf("%s: %d rows, want one per GPU (%d)", field, rows, k)
	}
	for i := 0; i < rows; i++ {
		if rowLen(i) != k {
			return fmt.Errorf("%s[%d]: %d entries, want %d", field, i, rowLen(i), k)
		}
	}
	return nil
}
