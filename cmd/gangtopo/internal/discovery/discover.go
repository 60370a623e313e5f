package discovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Option configures Discover.
type Option func(*options)

type options struct {
	gpus     GPULib
	sysfs    string
	node     string
	now      func() time.Time
	gangtopo string
}

// WithGPULib sets the GPU library (default: the real NVML, or Null in a
// build without cgo).
func WithGPULib(l GPULib) Option { return func(o *options) { o.gpus = l } }

// WithSysfs sets the sysfs root (default /sys).
func WithSysfs(root string) Option { return func(o *options) { o.sysfs = root } }

// WithNodeName sets the node's name (default: the short host name).
func WithNodeName(name string) Option { return func(o *options) { o.node = name } }

// WithClock sets the clock stamped into the map (tests fix it).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithVersion records the writing gangtopo's version in the map.
func WithVersion(v string) Option { return func(o *options) { o.gangtopo = v } }

func defaults(opts []Option) (*options, error) {
	o := &options{sysfs: "/sys", now: time.Now}
	for _, f := range opts {
		f(o)
	}
	if o.gpus == nil {
		o.gpus = DefaultGPULib()
	}
	if o.node == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("node name: %w (set one explicitly)", err)
		}
		o.node, _, _ = strings.Cut(h, ".")
	}
	return o, nil
}

// Discover takes stock of this node.
//
// Phases: (1) host CPUs and memory from sysfs; (2) GPUs from the GPU
// library: identity, NVLink ends, fabric, pairwise PCIe levels; a missing
// library or zero GPUs makes a CPU-only map, not an error; (3) each GPU's
// sysfs PCI path (and NUMA node, when the library gave none); (4) RDMA NICs
// from sysfs; (5) derived facts: the NVLink matrix (NVSwitch-aware), PCIe
// switch groups shared by GPUs and NICs, GPU-NIC distances and each GPU's
// nearest NICs, and the node's fabric domain.
func Discover(opts ...Option) (*NodeMap, error) {
	o, err := defaults(opts)
	if err != nil {
		return nil, err
	}
	m := &NodeMap{Version: NodeMapVersion, Node: o.node, Time: o.now().UTC(), Gangtopo: o.gangtopo, GPUSource: SourceNVML,
		GPUs: []GPU{}, NICs: []NIC{}}
	host, warns, err := readHost(o.sysfs)
	if err != nil {
		return nil, err
	}
	m.Host, m.Warnings = host, warns
	devs, levels, err := discoverGPUs(o.gpus, m)
	if err != nil {
		return nil, err
	}
	if err := addPCIPaths(o.sysfs, m); err != nil {
		return nil, err
	}
	nics, err := readNICs(o.sysfs)
	if err != nil {
		return nil, err
	}
	m.NICs = append(m.NICs, nics...)
	derive(m, devs, levels)
	return m, nil
}

// gpuFacts is what phase 2 collects per GPU beyond the GPU record.
type gpuFacts struct{ links []NVLinkEnd }

// discoverGPUs is phase 2. levels[i][j] is NVML's PCIe level for the pair.
func discoverGPUs(lib GPULib, m *NodeMap) ([]gpuFacts, [][]PCILevel, error) {
	if err := lib.Init(); err != nil {
		if errors.Is(err, ErrNoGPULib) {
			m.GPUSource, m.NoGPUReason = SourceNone, err.Error()
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("GPU discovery: %w", err)
	}
	defer lib.Shutdown() //nolint:errcheck // nothing useful to do on a failed shutdown
	var err error
	if m.DriverVersion, err = lib.DriverVersion(); err != nil {
		return nil, nil, fmt.Errorf("GPU discovery: %w", err)
	}
	devs, err := lib.Devices()
	if err != nil {
		return nil, nil, fmt.Errorf("GPU discovery: %w", err)
	}
	if len(devs) == 0 {
		m.GPUSource, m.NoGPUReason = SourceNone, "the GPU library reports no GPUs"
		return nil, nil, nil
	}
	facts := make([]gpuFacts, len(devs))
	for i, d := range devs {
		g, f, err := readGPU(d)
		if err != nil {
			return nil, nil, fmt.Errorf("GPU discovery: %w", err)
		}
		m.GPUs, facts[i] = append(m.GPUs, g), f
	}
	order := sortByIndex(m.GPUs)
	devs, facts = permute(devs, order), permute(facts, order)
	levels, err := pairLevels(devs)
	if err != nil {
		return nil, nil, fmt.Errorf("GPU discovery: %w", err)
	}
	return facts, levels, nil
}

func readGPU(d GPUDevice) (GPU, gpuFacts, error) {
	info, err := d.Info()
	if err != nil {
		return GPU{}, gpuFacts{}, err
	}
	g := GPU{
		Index: info.Index, Minor: info.Minor, UUID: info.UUID, Name: info.Name, Model: ShortModel(info.Name),
		MemoryMiB: info.MemoryMiB, PCIBusID: info.PCIBusID, NUMA: info.NUMA, PCIeSwitch: -1, MIG: info.MIG,
	}
	links, err := d.NVLinks()
	if err != nil {
		return g, gpuFacts{}, fmt.Errorf("GPU %d: %w", info.Index, err)
	}
	g.NVLinks = groupLinks(links)
	if g.Fabric, err = d.Fabric(); err != nil {
		return g, gpuFacts{}, fmt.Errorf("GPU %d: %w", info.Index, err)
	}
	return g, gpuFacts{links: links}, nil
}

// sortByIndex sorts GPUs by NVML index and returns the old position of each.
func sortByIndex(gs []GPU) []int {
	order := make([]int, len(gs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return gs[order[a]].Index < gs[order[b]].Index })
	sorted := permute(gs, order)
	copy(gs, sorted)
	return order
}

func permute[T any](xs []T, order []int) []T {
	out := make([]T, len(order))
	for i, o := range order {
		out[i] = xs[o]
	}
	return out
}

func pairLevels(devs []GPUDevice) ([][]PCILevel, error) {
	k := len(devs)
	lv := make([][]PCILevel, k)
	for i := range lv {
		lv[i] = make([]PCILevel, k)
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			l, err := devs[i].CommonAncestor(devs[j])
			if err != nil {
				return nil, err
			}
			lv[i][j], lv[j][i] = l, l
		}
	}
	return lv, nil
}

// addPCIPaths is phase 3.
func addPCIPaths(root string, m *NodeMap) error {
	for i := range m.GPUs {
		g := &m.GPUs[i]
		p, err := pciPath(root, g.PCIBusID)
		if err != nil {
			return fmt.Errorf("GPU %d: %w", g.Index, err)
		}
		g.PCIPath = p
		if g.NUMA < 0 && p != nil {
			if n, err := readInt(filepath.Join(root, "bus", "pci", "devices", g.PCIBusID, "numa_node")); err == nil {
				g.NUMA = n
			}
		}
	}
	return nil
}

// ShortModel turns an NVML device name into the short lower-case model
// used as a GRES type: the first word after a vendor or line prefix, up to
// its first dash. "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA A100-SXM4-80GB"
// -> "a100", "Tesla V100-SXM2-32GB" -> "v100", "NVIDIA L40S" -> "l40s".
// Names that differ only in memory size map to one model; `gangtopo
// topology build --model` overrides the mapping.
func ShortModel(name string) string {
	fs := strings.Fields(strings.ToLower(name))
	for len(fs) > 1 {
		switch fs[0] {
		case "nvidia", "tesla", "geforce", "quadro", "rtx":
			fs = fs[1:]
			continue
		}
		break
	}
	if len(fs) == 0 {
		return "unknown"
	}
	m, _, _ := strings.Cut(fs[0], "-")
	return m
}

// groupLinks counts links per remote end, in order of first link.
func groupLinks(ends []NVLinkEnd) []NVLinkGroup {
	var out []NVLinkGroup
	at := map[NVLinkEnd]int{}
	for _, e := range ends {
		key := NVLinkEnd{Remote: e.Remote, RemoteBusID: e.RemoteBusID}
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, NVLinkGroup{Remote: e.Remote, RemoteBusID: e.RemoteBusID})
		}
		out[i].Links++
	}
	return out
}
