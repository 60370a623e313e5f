package topology

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/hostlist"
)

// FileVersion is the cluster file format this package reads.
const FileVersion = "v1"

// Parse reads a cluster file (YAML, `version: v1`; see docs/cluster-file.md)
// and builds the Cluster. name labels error messages (usually the file
// path). Every problem found is reported, each as `name:line: field: what`.
func Parse(r io.Reader, name string) (*Cluster, error) {
	spec, err := ParseSpec(r, name)
	if err != nil {
		return nil, err
	}
	return Build(spec)
}

// ParseSpec reads a cluster file into a Spec without building it, for tools
// that edit or merge specs.
func ParseSpec(r io.Reader, name string) (Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", name, err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return Spec{}, fmt.Errorf("%s: empty file (want a cluster description starting with `version: %s`)", name, FileVersion)
		}
		return Spec{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(doc.Content) != 1 {
		return Spec{}, fmt.Errorf("%s: empty document", name)
	}
	f := &clusterFile{yamlReader: yamlReader{file: name}, hardware: map[string]*hardwareSpec{}}
	f.spec.At = name
	f.read(doc.Content[0])
	if err := f.err(); err != nil {
		return Spec{}, err
	}
	return f.spec, nil
}

type clusterFile struct {
	yamlReader
	spec     Spec
	version  string
	hardware map[string]*hardwareSpec
	// deferred node groups: read after hardware, whatever the key order.
	nodeGroups *yaml.Node
	topology   *yaml.Node
}

// hardwareSpec is one named hardware profile.
type hardwareSpec struct {
	cpus      int
	threads   int
	memoryMiB int64
	gpus      []GPUSpec
	links     [][]int
	nics      []NICSpec
	// nvlinkGBs, pcieGBs, tflops: the speeds the gpus block gives (0:
	// defaults).
	nvlinkGBs, pcieGBs, tflops float64
}

func (f *clusterFile) read(root *yaml.Node) {
	f.mapping(root, "", fields{
		"version":  func(v *yaml.Node, p string) { f.str(v, p, &f.version) },
		"name":     func(v *yaml.Node, p string) { f.str(v, p, &f.spec.Name) },
		"hardware": f.readHardwareMap,
		"nodes":    func(v *yaml.Node, _ string) { f.nodeGroups = v },
		"topology": func(v *yaml.Node, _ string) { f.topology = v },
	}, "version", "name", "hardware", "nodes", "topology")
	if f.version != "" && f.version != FileVersion {
		f.errorf(root, "version", "unsupported version %q (this gangtopo reads %s)", f.version, FileVersion)
		return
	}
	if f.nodeGroups != nil {
		f.sequence(f.nodeGroups, "nodes", f.readNodeGroup)
	}
	if f.topology != nil {
		f.readTopology(f.topology, "topology")
	}
}

func (f *clusterFile) readHardwareMap(n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		f.errorf(n, path, "want a mapping from profile name to hardware, got %s", kindName(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := f.hardware[k.Value]; dup {
			f.errorf(k, joinPath(path, k.Value), "duplicate hardware profile")
			continue
		}
		f.hardware[k.Value] = f.readHardware(v, joinPath(path, k.Value))
	}
}

func (f *clusterFile) readHardware(n *yaml.Node, path string) *hardwareSpec {
	hw := &hardwareSpec{}
	var nics *yaml.Node
	f.mapping(n, path, fields{
		"cpus":             func(v *yaml.Node, p string) { f.intField(v, p, 1, 1<<20, &hw.cpus) },
		"threads_per_core": func(v *yaml.Node, p string) { f.intField(v, p, 1, 16, &hw.threads) },
		"memory_mib":       func(v *yaml.Node, p string) { f.integer(v, p, 0, 1<<40, &hw.memoryMiB) },
		"gpus":             func(v *yaml.Node, p string) { f.readGPUs(v, p, hw) },
		"nics":             func(v *yaml.Node, _ string) { nics = v },
	}, "cpus", "memory_mib")
	if hw.threads > 1 && hw.cpus%hw.threads != 0 {
		f.errorf(n, joinPath(path, "threads_per_core"), "%d CPUs are not whole cores of %d threads", hw.cpus, hw.threads)
	}
	if nics != nil { // after gpus, whatever the key order, so GPU indices can be checked
		f.sequence(nics, joinPath(path, "nics"), func(v *yaml.Node, p string) { hw.nics = append(hw.nics, f.readNIC(v, p, len(hw.gpus))) })
	}
	return hw
}

// gpuBlock is the raw `gpus:` mapping of a hardware profile.
type gpuBlock struct {
	count, linksPerPair  int
	model, nvlink        string
	memoryMiB            int64
	numa, pcieSwitch     []int
	pciBusIDs            []string
	matrix               [][]int
	list                 *yaml.Node
	numaNode, switchNode *yaml.Node
}

// NVLink modes of the `gpus.nvlink` key.
var nvlinkModes = []string{"none", "nvswitch", "pairs", "matrix", "list"}

func (f *clusterFile) readGPUs(n *yaml.Node, path string, hw *hardwareSpec) {
	b := gpuBlock{nvlink: "none", linksPerPair: 1}
	f.mapping(n, path, fields{
		"count":          func(v *yaml.Node, p string) { f.intField(v, p, 0, 64, &b.count) },
		"model":          func(v *yaml.Node, p string) { f.str(v, p, &b.model) },
		"memory_mib":     func(v *yaml.Node, p string) { f.integer(v, p, 0, 1<<30, &b.memoryMiB) },
		"nvlink":         func(v *yaml.Node, p string) { f.str(v, p, &b.nvlink) },
		"links_per_pair": func(v *yaml.Node, p string) { f.intField(v, p, 1, 255, &b.linksPerPair) },
		"links":          func(v *yaml.Node, p string) { b.matrix = f.readMatrix(v, p) },
		"numa":           func(v *yaml.Node, _ string) { b.numaNode = v },
		"pcie_switch":    func(v *yaml.Node, _ string) { b.switchNode = v },
		"pci_bus_ids":    func(v *yaml.Node, p string) { f.strings(v, p, &b.pciBusIDs) },
		"list":           func(v *yaml.Node, _ string) { b.list = v },
		"nvlink_gbytes":  func(v *yaml.Node, p string) { f.number(v, p, checkSpeed, &hw.nvlinkGBs) },
		"pcie_gbytes":    func(v *yaml.Node, p string) { f.number(v, p, checkSpeed, &hw.pcieGBs) },
		"dense_tflops":   func(v *yaml.Node, p string) { f.number(v, p, checkTFLOPS, &hw.tflops) },
	}, "count")
	if hw.nvlinkGBs > 0 && b.nvlink == "none" {
		f.errorf(n, joinPath(path, "nvlink_gbytes"), "given, but the GPUs have no NVLink (nvlink: none); set nvlink or leave the speed out")
	}
	if b.count > 0 && b.model == "" {
		f.errorf(n, joinPath(path, "model"), "missing (required when count > 0)")
	}
	if b.numaNode != nil {
		f.ints(b.numaNode, joinPath(path, "numa"), -1, 1024, b.count, &b.numa)
	}
	if b.switchNode != nil {
		f.ints(b.switchNode, joinPath(path, "pcie_switch"), -1, 1<<16, b.count, &b.pcieSwitch)
	}
	for i := 0; i < b.count; i++ {
		g := GPUSpec{Model: b.model, MemoryMiB: b.memoryMiB, NUMA: -1, PCIeSwitch: -1}
		g.NUMA = pick(b.numa, i, -1)
		g.PCIeSwitch = pick(b.pcieSwitch, i, -1)
		if i < len(b.pciBusIDs) {
			g.PCIBusID = b.pciBusIDs[i]
		}
		hw.gpus = append(hw.gpus, g)
	}
	f.checkPerGPU(n, path, b)
	hw.links = f.linksFor(n, path, &b, hw)
}

func pick(xs []int, i, def int) int {
	if i < len(xs) {
		return xs[i]
	}
	return def
}

func (f *clusterFile) checkPerGPU(n *yaml.Node, path string, b gpuBlock) {
	for _, c := range []struct {
		key string
		got int
	}{{"numa", len(b.numa)}, {"pcie_switch", len(b.pcieSwitch)}, {"pci_bus_ids", len(b.pciBusIDs)}} {
		if c.got != 0 && c.got != b.count {
			f.errorf(n, joinPath(path, c.key), "has %d entries, want one per GPU (count: %d)", c.got, b.count)
		}
	}
}

// linksFor builds the NVLink matrix from the profile's nvlink mode.
func (f *clusterFile) linksFor(n *yaml.Node, path string, b *gpuBlock, hw *hardwareSpec) [][]int {
	if b.matrix != nil && b.nvlink != "matrix" {
		f.errorf(n, joinPath(path, "links"), "a links matrix needs `nvlink: matrix` (nvlink is %q)", b.nvlink)
	}
	if b.list != nil && b.nvlink != "list" {
		f.errorf(n, joinPath(path, "list"), "a per-GPU list needs `nvlink: list` (nvlink is %q)", b.nvlink)
	}
	k := b.count
	switch b.nvlink {
	case "none":
		return nil
	case "nvswitch":
		return fullMesh(k, b.linksPerPair)
	case "pairs":
		if k%2 != 0 {
			f.errorf(n, joinPath(path, "nvlink"), "pairs needs an even GPU count, got %d", k)
			return nil
		}
		m := squareMatrix(k)
		for i := 0; i+1 < k; i += 2 {
			m[i][i+1], m[i+1][i] = b.linksPerPair, b.linksPerPair
		}
		return m
	case "matrix":
		if b.matrix == nil {
			f.errorf(n, joinPath(path, "links"), "missing: `nvlink: matrix` needs a links matrix")
		}
		return b.matrix
	case "list":
		if b.list == nil {
			f.errorf(n, joinPath(path, "list"), "missing: `nvlink: list` needs a per-GPU list")
			return nil
		}
		return f.readGPUList(b.list, joinPath(path, "list"), hw)
	}
	f.errorf(n, joinPath(path, "nvlink"), "unknown value %q (want one of %v)", b.nvlink, nvlinkModes)
	return nil
}

func squareMatrix(k int) [][]int {
	m := make([][]int, k)
	for i := range m {
		m[i] = make([]int, k)
	}
	return m
}

func fullMesh(k, links int) [][]int {
	m := squareMatrix(k)
	for i := range m {
		for j := range m[i] {
			if i != j {
				m[i][j] = links
			}
		}
	}
	return m
}

func (f *clusterFile) readMatrix(n *yaml.Node, path string) [][]int {
	var m [][]int
	f.sequence(n, path, func(row *yaml.Node, p string) {
		var r []int
		f.ints(row, p, -1, 255, 0, &r)
		m = append(m, r)
	})
	return m
}

// readGPUList reads the per-GPU form: each entry gives an index, optional
// PCI/NUMA facts and its NVLink peers as `nvlink: {peer: links}`. One side of
// a pair is enough; when both sides are given they must agree.
func (f *clusterFile) readGPUList(n *yaml.Node, path string, hw *hardwareSpec) [][]int {
	k := len(hw.gpus)
	m := squareMatrix(k)
	set := squareMatrix(k)
	f.sequence(n, path, func(v *yaml.Node, p string) {
		idx := -1
		var peers *yaml.Node
		var g GPUSpec
		g.NUMA, g.PCIeSwitch = -1, -1
		f.mapping(v, p, fields{
			"index":       func(v *yaml.Node, p string) { f.intField(v, p, 0, 1<<10, &idx) },
			"pci_bus_id":  func(v *yaml.Node, p string) { f.str(v, p, &g.PCIBusID) },
			"numa":        func(v *yaml.Node, p string) { f.intField(v, p, -1, 1024, &g.NUMA) },
			"pcie_switch": func(v *yaml.Node, p string) { f.intField(v, p, -1, 1<<16, &g.PCIeSwitch) },
			"nvlink":      func(v *yaml.Node, _ string) { peers = v },
		}, "index")
		if idx < 0 {
			return
		}
		if idx >= k {
			f.errorf(v, joinPath(p, "index"), "GPU index %d is out of range (the profile has %d GPUs: 0..%d)", idx, k, k-1)
			return
		}
		hw.gpus[idx].PCIBusID = g.PCIBusID
		hw.gpus[idx].NUMA, hw.gpus[idx].PCIeSwitch = g.NUMA, g.PCIeSwitch
		if peers != nil {
			f.readPeers(peers, joinPath(p, "nvlink"), idx, k, m, set)
		}
	})
	return m
}

func (f *clusterFile) readPeers(n *yaml.Node, path string, idx, k int, m, set [][]int) {
	if n.Kind != yaml.MappingNode {
		f.errorf(n, path, "want a mapping from peer GPU index to link count, got %s", kindName(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		peer, err := strconv.Atoi(kn.Value)
		sub := joinPath(path, kn.Value)
		switch {
		case err != nil:
			f.errorf(kn, sub, "peer %q is not a GPU index", kn.Value)
			continue
		case peer < 0 || peer >= k:
			f.errorf(kn, sub, "link to missing peer GPU %d (the profile has GPUs 0..%d)", peer, k-1)
			continue
		case peer == idx:
			f.errorf(kn, sub, "a GPU cannot link to itself")
			continue
		}
		var links int
		f.intField(vn, sub, 0, 255, &links)
		if set[peer][idx] == 1 && m[peer][idx] != links {
			f.errorf(vn, sub, "GPU %d says %d links to GPU %d, but GPU %d says %d", idx, links, peer, peer, m[peer][idx])
		}
		m[idx][peer], m[peer][idx] = links, links
		set[idx][peer] = 1
	}
}

func (f *clusterFile) readNIC(n *yaml.Node, path string, gpus int) NICSpec {
	nic := NICSpec{NUMA: -1, PCIeSwitch: -1}
	f.mapping(n, path, fields{
		"name":        func(v *yaml.Node, p string) { f.str(v, p, &nic.Name) },
		"netdev":      func(v *yaml.Node, p string) { f.str(v, p, &nic.NetDev) },
		"pci_bus_id":  func(v *yaml.Node, p string) { f.str(v, p, &nic.PCIBusID) },
		"numa":        func(v *yaml.Node, p string) { f.intField(v, p, -1, 1024, &nic.NUMA) },
		"pcie_switch": func(v *yaml.Node, p string) { f.intField(v, p, -1, 1<<16, &nic.PCIeSwitch) },
		"link_layer": func(v *yaml.Node, p string) {
			f.str(v, p, &nic.LinkLayer)
			if nic.LinkLayer != "InfiniBand" && nic.LinkLayer != "Ethernet" {
				f.errorf(v, p, "unknown link layer %q (want InfiniBand or Ethernet)", nic.LinkLayer)
			}
		},
		"rate_gbps": func(v *yaml.Node, p string) { f.intField(v, p, 0, 1<<20, &nic.RateGbps) },
		"gpus": func(v *yaml.Node, p string) {
			f.sequence(v, p, func(v *yaml.Node, p string) {
				var g int
				f.intField(v, p, 0, 1<<10, &g)
				if g >= gpus {
					f.errorf(v, p, "GPU index %d is out of range (the profile has %d GPUs: 0..%d)", g, gpus, gpus-1)
					return
				}
				nic.GPUs = append(nic.GPUs, g)
			})
		},
	}, "name")
	return nic
}

// readNodeGroup reads one `nodes:` entry: a host list sharing a profile.
func (f *clusterFile) readNodeGroup(n *yaml.Node, path string) {
	var names, hwName string
	var parts, feats []string
	weight := 1
	cpus, mem := -1, int64(-1)
	f.mapping(n, path, fields{
		"names":      func(v *yaml.Node, p string) { f.str(v, p, &names) },
		"hardware":   func(v *yaml.Node, p string) { f.str(v, p, &hwName) },
		"partitions": func(v *yaml.Node, p string) { f.strings(v, p, &parts) },
		"features":   func(v *yaml.Node, p string) { f.strings(v, p, &feats) },
		"weight":     func(v *yaml.Node, p string) { f.intField(v, p, 0, 1<<31-1, &weight) },
		"cpus":       func(v *yaml.Node, p string) { f.intField(v, p, 1, 1<<20, &cpus) },
		"memory_mib": func(v *yaml.Node, p string) { f.integer(v, p, 0, 1<<40, &mem) },
	}, "names", "hardware")
	if names == "" || hwName == "" {
		return
	}
	hw, ok := f.hardware[hwName]
	if !ok {
		f.errorf(n, joinPath(path, "hardware"), "unknown hardware %q (defined: %s)", hwName, profileList(f.hardware))
		return
	}
	hosts, err := hostlist.Expand(names)
	if err != nil {
		f.errorf(n, joinPath(path, "names"), "%v", err)
		return
	}
	if len(f.spec.Nodes)+len(hosts) > MaxNodes {
		f.errorf(n, joinPath(path, "names"), "more than %d nodes in the cluster", MaxNodes)
		return
	}
	for _, h := range hosts {
		ns := NodeSpec{
			Name: h, At: f.at(n), Hardware: hwName, CPUs: hw.cpus, ThreadsPerCore: hw.threads, MemoryMiB: hw.memoryMiB,
			Partitions: parts, Features: feats, Weight: weight,
			GPUs: append([]GPUSpec(nil), hw.gpus...), Links: hw.links, NICs: hw.nics,
			NVLinkGBs: hw.nvlinkGBs, PCIeGBs: hw.pcieGBs, DenseTFLOPS: hw.tflops,
		}
		if cpus > 0 {
			ns.CPUs = cpus
		}
		if mem >= 0 {
			ns.MemoryMiB = mem
		}
		f.spec.Nodes = append(f.spec.Nodes, ns)
	}
}

func profileList(m map[string]*hardwareSpec) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprint(names)
}
