package discovery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PCILevel is how far apart two PCI devices are, in the terms of
// `nvidia-smi topo -m` and NVML's GpuTopologyLevel, nearest first.
type PCILevel uint8

// The levels, nearest first. LevelSelf marks the diagonal of a matrix;
// LevelUnknown sorts last.
const (
	LevelSelf  PCILevel = iota // the device itself ("X")
	LevelBoard                 // same multi-GPU board
	LevelPIX                   // behind one PCIe switch
	LevelPXB                   // several PCIe switches, no host bridge
	LevelPHB                   // through one PCIe host bridge (same root complex)
	LevelNode                  // across host bridges inside one NUMA node
	LevelSys                   // across NUMA nodes (the socket interconnect)
	LevelUnknown
)

var levelNames = map[PCILevel]string{
	LevelSelf: "X", LevelBoard: "BRD", LevelPIX: "PIX", LevelPXB: "PXB", LevelPHB: "PHB",
	LevelNode: "NODE", LevelSys: "SYS", LevelUnknown: "?",
}

// String returns the nvidia-smi abbreviation.
func (l PCILevel) String() string {
	if s, ok := levelNames[l]; ok {
		return s
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// ParsePCILevel reads an abbreviation written by String.
func ParsePCILevel(s string) (PCILevel, error) {
	for l, n := range levelNames {
		if n == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown PCI level %q (want one of X, BRD, PIX, PXB, PHB, NODE, SYS, ?)", s)
}

// MarshalJSON writes the abbreviation.
func (l PCILevel) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// UnmarshalJSON reads the abbreviation.
func (l *PCILevel) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParsePCILevel(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// PCIPath is a device's position in the PCI tree, from the root bus down:
// ["pci0000:17", "0000:17:01.0" (root port), "0000:18:00.0" (switch
// upstream port), "0000:19:00.0" (downstream port), "0000:1a:00.0"].
type PCIPath []string

// pciPath resolves the sysfs directory of PCI device busID under root
// (root/bus/pci/devices/<busID> links into root/devices/...). It returns
// nil when the device is not in the tree.
func pciPath(root, busID string) (PCIPath, error) {
	link := filepath.Join(root, "bus", "pci", "devices", busID)
	if _, err := os.Lstat(link); err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	return pathOfDevice(root, link)
}

// pathOfDevice resolves a sysfs link to a PCI device directory and returns
// the device's PCI path.
func pathOfDevice(root, link string) (PCIPath, error) {
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	devices, err := filepath.EvalSymlinks(filepath.Join(root, "devices"))
	if err != nil {
		return nil, fmt.Errorf("sysfs: %w", err)
	}
	rel, err := filepath.Rel(devices, real)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("sysfs: %s resolves to %s, outside %s", link, real, devices)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	// Platform paths such as platform/... or virtual/... are not PCI.
	if len(parts) == 0 || !strings.HasPrefix(parts[0], "pci") {
		return nil, nil
	}
	var p PCIPath
	for _, s := range parts {
		if strings.HasPrefix(s, "pci") || isBusID(s) {
			p = append(p, s)
		}
	}
	return p, nil
}

// isBusID reports whether s looks like "0000:18:00.0".
func isBusID(s string) bool {
	var d, b, dev, fn int
	n, err := fmt.Sscanf(s, "%x:%x:%x.%x", &d, &b, &dev, &fn)
	return err == nil && n == 4 && strings.Count(s, ":") == 2
}

// NormalizeBusID turns NVML's "00000000:18:00.0" into sysfs's
// "0000:18:00.0" (lower case, 4-digit domain unless it needs more).
func NormalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	var dom, bus, dev, fn uint64
	if _, err := fmt.Sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err != nil {
		return id
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", dom, bus, dev, fn)
}

// Level is the distance between two devices with known PCI paths and NUMA
// nodes (-1 unknown). Overview: the longest common prefix of the two paths
// is their nearest common ancestor. No common prefix means different root
// complexes: NODE when both sit on one NUMA node, else SYS. A common root
// bus only: PHB. A common PCI bridge below the root port means a switch:
// PIX when each device is at most two bridges (one switch: upstream and
// downstream port) below it, else PXB. An empty path on either side is
// decided by NUMA alone.
func Level(a, b PCIPath, numaA, numaB int) PCILevel {
	if len(a) == 0 || len(b) == 0 {
		return numaLevel(numaA, numaB)
	}
	common := 0
	for common < len(a) && common < len(b) && a[common] == b[common] {
		common++
	}
	switch {
	case common == 0:
		return numaLevel(numaA, numaB)
	case common <= 2:
		// Only the root bus, or the root port (one link cannot hold two
		// devices; two functions of one device land here): host bridge.
		return LevelPHB
	case len(a)-common <= 2 && len(b)-common <= 2:
		return LevelPIX
	default:
		return LevelPXB
	}
}

func numaLevel(a, b int) PCILevel {
	if a >= 0 && a == b {
		return LevelNode
	}
	return LevelSys
}

// switchKey is the PCIe switch a device sits behind: the switch's upstream
// port, the element right below the root port. A device on the root port
// itself (path of 3) has none.
func switchKey(p PCIPath) string {
	if len(p) >= 5 {
		return p[2]
	}
	return ""
}

// readInt reads a sysfs file holding one integer.
func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
