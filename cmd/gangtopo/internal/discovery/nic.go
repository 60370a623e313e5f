package discovery

import (
	"github.com/gangtopo/gangtopo/selector/hostlist"

	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// NIC is one RDMA device (InfiniBand HCA or RoCE NIC) as sysfs shows it.
type NIC struct {
	Name            string    `json:"name"` // RDMA device: what NCCL_IB_HCA takes
	PCIBusID        string    `json:"pci_bus_id,omitempty"`
	PCIPath         PCIPath   `json:"pci_path,omitempty"`
	NUMA            int       `json:"numa"`
	PCIeSwitch      int       `json:"pcie_switch"`
	NetDevs         []string  `json:"netdevs,omitempty"`
	VirtualFunction bool      `json:"virtual_function,omitempty"`
	Ports           []NICPort `json:"ports"`
	// NearestGPUs lists the GPU positions that have this NIC among their
	// nearest (see Discover).
	NearestGPUs []int `json:"nearest_gpus,omitempty"`
}

// NICPort is one port of an RDMA device.
type NICPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"`                // ACTIVE, DOWN, INIT, ARMED
	PhysState string `json:"phys_state,omitempty"` // LinkUp, Polling, Disabled
	LinkLayer string `json:"link_layer"`           // InfiniBand or Ethernet (RoCE)
	RateGbps  int    `json:"rate_gbps"`
	Rate      string `json:"rate,omitempty"` // as sysfs says it: "400 Gb/sec (4X NDR)"
}

// Active reports whether the port can carry traffic.
func (p NICPort) Active() bool { return p.State == "ACTIVE" }

// Usable reports whether NCCL should be pointed at the NIC: a physical
// function with at least one active port.
func (n *NIC) Usable() bool {
	if n.VirtualFunction {
		return false
	}
	for _, p := range n.Ports {
		if p.Active() {
			return true
		}
	}
	return false
}

// LinkLayer is the link layer of the NIC's first active port (or first
// port): "InfiniBand" or "Ethernet".
func (n *NIC) LinkLayer() string {
	for _, p := range n.Ports {
		if p.Active() {
			return p.LinkLayer
		}
	}
	if len(n.Ports) > 0 {
		return n.Ports[0].LinkLayer
	}
	return ""
}

// RateGbps is the fastest port's rate.
func (n *NIC) RateGbps() int {
	r := 0
	for _, p := range n.Ports {
		r = max(r, p.RateGbps)
	}
	return r
}

// readNICs lists the RDMA devices under root/class/infiniband with their
// PCI position, ports and net devices (matched through root/class/net). A
// host without the directory has no RDMA NICs; that is not an error.
func readNICs(root string) ([]NIC, error) {
	dir := filepath.Join(root, "class", "infiniband")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	netdevs, err := readNetDevs(root)
	if err != nil {
		return nil, err
	}
	var out []NIC
	for _, e := range ents {
		nic, err := readNIC(root, filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			return nil, err
		}
		nic.NetDevs = netdevs[nic.PCIBusID]
		out = append(out, nic)
	}
	sort.Slice(out, func(a, b int) bool { return hostlist.Less(out[a].Name, out[b].Name) })
	return out, nil
}

func readNIC(root, dir, name string) (NIC, error) {
	nic := NIC{Name: name, NUMA: -1, PCIeSwitch: -1}
	dev := filepath.Join(dir, "device")
	path, err := pathOfDevice(root, dev)
	if err != nil {
		return nic, fmt.Errorf("RDMA device %s: %w", name, err)
	}
	nic.PCIPath = path
	if len(path) > 0 {
		nic.PCIBusID = path[len(path)-1]
	}
	if n, err := readInt(filepath.Join(dev, "numa_node")); err == nil {
		nic.NUMA = n
	}
	if _, err := os.Lstat(filepath.Join(dev, "physfn")); err == nil {
		nic.VirtualFunction = true
	}
	ports, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return nic, fmt.Errorf("RDMA device %s: %w", name, err)
	}
	for _, p := range ports {
		port, err := readPort(filepath.Join(dir, "ports", p.Name()))
		if err != nil {
			return nic, fmt.Errorf("RDMA device %s port %s: %w", name, p.Name(), err)
		}
		nic.Ports = append(nic.Ports, port)
	}
	sort.Slice(nic.Ports, func(a, b int) bool { return nic.Ports[a].Port < nic.Ports[b].Port })
	return nic, nil
}

// readPort reads one port directory: state ("4: ACTIVE"), phys_state
// ("5: LinkUp"), link_layer ("InfiniBand") and rate ("400 Gb/sec (4X NDR)").
func readPort(dir string) (NICPort, error) {
	var p NICPort
	n, err := strconv.Atoi(filepath.Base(dir))
	if err != nil {
		return p, fmt.Errorf("port directory %q is not a number", filepath.Base(dir))
	}
	p.Port = n
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	p.State = afterColon(read("state"))
	p.PhysState = afterColon(read("phys_state"))
	p.LinkLayer = read("link_layer")
	p.Rate = read("rate")
	if p.State == "" || p.LinkLayer == "" {
		return p, fmt.Errorf("missing state or link_layer")
	}
	if p.Rate != "" {
		f := strings.Fields(p.Rate)
		g, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return p, fmt.Errorf("bad rate %q", p.Rate)
		}
		p.RateGbps = int(math.Round(g))
	}
	return p, nil
}

// afterColon turns "4: ACTIVE" into "ACTIVE".
func afterColon(s string) string {
	if _, v, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(v)
	}
	return s
}

// readNetDevs maps PCI bus ids to the net devices on them, from
// root/class/net/<if>/device.
func readNetDevs(root string) (map[string][]string, error) {
	out := map[string][]string{}
	dir := filepath.Join(root, "class", "net")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	for _, e := range ents {
		dev := filepath.Join(dir, e.Name(), "device")
		if _, err := os.Lstat(dev); err != nil {
			continue // virtual interface (lo, bond, bridge): no device
		}
		path, err := pathOfDevice(root, dev)
		if err != nil {
			return nil, fmt.Errorf("net device %s: %w", e.Name(), err)
		}
		if len(path) > 0 {
			id := path[len(path)-1]
			out[id] = append(out[id], e.Name())
		}
	}
	return out, nil
}
