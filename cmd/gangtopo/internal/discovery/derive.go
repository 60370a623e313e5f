package discovery

import (
	"fmt"
	"sort"
)

// derive is phase 5 of Discover: facts computed from what was read.
func derive(m *NodeMap, facts []gpuFacts, nvmlLevels [][]PCILevel) {
	k := len(m.GPUs)
	busIDs := make([]string, k)
	ends := make([][]NVLinkEnd, k)
	for i, g := range m.GPUs {
		busIDs[i], ends[i] = g.PCIBusID, facts[i].links
	}
	nv := resolveNVLinks(busIDs, ends)
	m.NVLink = NVLink{Mode: nv.Mode, Links: nv.Links}
	m.Warnings = append(m.Warnings, nv.Warnings...)
	m.PCIe = gpuLevels(m, nvmlLevels)
	assignSwitches(m)
	m.NICPCIe = nicLevels(m)
	nearestNICs(m)
	m.Fabric, m.Warnings = nodeFabric(m.GPUs, m.Warnings)
	for _, g := range m.GPUs {
		if g.Minor >= 0 && g.Minor != g.Index {
			m.Warnings = append(m.Warnings, fmt.Sprintf("GPU %d (PCI order) is /dev/nvidia%d: gres.conf from `gangtopo gen gres` names device files by index; fix its File= for this node", g.Index, g.Minor))
		}
	}
}

// gpuLevels fills the GPU-GPU PCIe matrix: NVML's level where it gave one,
// else the level computed from sysfs paths and NUMA nodes.
func gpuLevels(m *NodeMap, nvmlLevels [][]PCILevel) [][]PCILevel {
	k := len(m.GPUs)
	out := make([][]PCILevel, k)
	for i := range out {
		out[i] = make([]PCILevel, k)
		for j := range out[i] {
			switch {
			case i == j:
				out[i][j] = LevelSelf
			case nvmlLevels != nil && nvmlLevels[i][j] != LevelUnknown && nvmlLevels[i][j] != LevelSelf:
				out[i][j] = nvmlLevels[i][j]
			default:
				a, b := m.GPUs[i], m.GPUs[j]
				out[i][j] = Level(a.PCIPath, b.PCIPath, a.NUMA, b.NUMA)
			}
		}
	}
	return out
}

// assignSwitches numbers the PCIe switches of the node and records which
// one each GPU and NIC sits behind.
//
// With sysfs paths, a device's switch is the upstream port right below its
// root port, and GPUs and NICs share one numbering (in PCI bus order), so
// "same pcie_switch" means "reach each other without the host bridge".
// When some GPU has no path (the sysfs tree does not show it), GPUs are
// grouped by NVML's levels instead: pairs at PIX or PXB share a switch.
// Such groups cannot be related to NIC paths, so NICs are then numbered
// after the GPU groups.
func assignSwitches(m *NodeMap) {
	allPaths := true
	for _, g := range m.GPUs {
		allPaths = allPaths && len(g.PCIPath) > 0
	}
	next := 0
	ids := map[string]int{}
	number := func(keys []string) {
		sort.Strings(keys)
		for _, key := range keys {
			if _, ok := ids[key]; !ok && key != "" {
				ids[key] = next
				next++
			}
		}
	}
	if allPaths {
		var keys []string
		for _, g := range m.GPUs {
			keys = append(keys, switchKey(g.PCIPath))
		}
		for _, n := range m.NICs {
			keys = append(keys, switchKey(n.PCIPath))
		}
		number(keys)
		for i := range m.GPUs {
			m.GPUs[i].PCIeSwitch = lookup(ids, switchKey(m.GPUs[i].PCIPath))
		}
	} else {
		next = groupByLevel(m)
	}
	var nicKeys []string
	for _, n := range m.NICs {
		nicKeys = append(nicKeys, switchKey(n.PCIPath))
	}
	number(nicKeys)
	for i := range m.NICs {
		m.NICs[i].PCIeSwitch = lookup(ids, switchKey(m.NICs[i].PCIPath))
	}
}

func lookup(ids map[string]int, key string) int {
	if id, ok := ids[key]; ok && key != "" {
		return id
	}
	return -1
}

// groupByLevel gives GPUs switch ids from the PCIe matrix: connected
// components of pairs at PIX or PXB, numbered by their lowest GPU. A GPU
// alone gets its own id: with NVML alone a GPU alone behind a switch
// cannot be told from one on a root port, and distinct ids are what
// matters to placement. It returns the next free id.
func groupByLevel(m *NodeMap) int {
	k := len(m.GPUs)
	uf := newUnionFind(k)
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			if l := m.PCIe[i][j]; l == LevelPIX || l == LevelPXB || l == LevelBoard {
				uf.union(i, j)
			}
		}
	}
	ids := map[int]int{}
	for i := 0; i < k; i++ {
		r := uf.find(i)
		if _, ok := ids[r]; !ok {
			ids[r] = len(ids)
		}
		m.GPUs[i].PCIeSwitch = ids[r]
	}
	return len(ids)
}

// nicLevels is the GPU x NIC distance matrix.
func nicLevels(m *NodeMap) [][]PCILevel {
	out := make([][]PCILevel, len(m.GPUs))
	for i, g := range m.GPUs {
		out[i] = make([]PCILevel, len(m.NICs))
		for n, nic := range m.NICs {
			out[i][n] = Level(g.PCIPath, nic.PCIPath, g.NUMA, nic.NUMA)
		}
	}
	return out
}

// nearestNICs records, for each GPU, the physical NICs at the smallest
// distance from it (all of them on a tie, as on DGX A100 where two NICs
// share each GPU pair's switch), and for each NIC the GPUs it is nearest to.
// Port state is not considered here: this is the hardware map. The node file
// (BuildNodeFile) picks among NICs whose ports are up.
func nearestNICs(m *NodeMap) {
	for i := range m.GPUs {
		for _, n := range nearest(m.NICPCIe[i], m.NICs, func(*NIC) bool { return true }) {
			m.GPUs[i].NearestNIC = append(m.GPUs[i].NearestNIC, NICAtLevel{Name: m.NICs[n].Name, Level: m.NICPCIe[i][n]})
			m.NICs[n].NearestGPUs = append(m.NICs[n].NearestGPUs, i)
		}
	}
}

// nearest returns the indices of the eligible physical NICs at the least
// level in row, in NIC order.
func nearest(row []PCILevel, nics []NIC, eligible func(*NIC) bool) []int {
	best := LevelUnknown + 1
	var out []int
	for n := range nics {
		if nics[n].VirtualFunction || !eligible(&nics[n]) {
			continue
		}
		switch l := row[n]; {
		case l < best:
			best, out = l, []int{n}
		case l == best:
			out = append(out, n)
		}
	}
	return out
}

// nodeFabric is the fabric domain all GPUs share, or nil. GPUs that
// disagree (some in a clique, some not, or in different cliques) leave the
// node out of any block, with a warning: a half-registered tray must not
// be placed as part of its rack.
func nodeFabric(gpus []GPU, warns []string) (*NodeFabric, []string) {
	if len(gpus) == 0 {
		return nil, warns
	}
	first := gpus[0].Fabric.Domain()
	for _, g := range gpus[1:] {
		if d := g.Fabric.Domain(); d != first {
			return nil, append(warns, fmt.Sprintf("GPUs disagree on their NVLink fabric (GPU %d: %q, GPU %d: %q); the node is in no block", gpus[0].Index, first, g.Index, d))
		}
	}
	if first == "" {
		return nil, warns
	}
	f := gpus[0].Fabric
	return &NodeFabric{ClusterUUID: f.ClusterUUID, CliqueID: f.CliqueID}, warns
}
