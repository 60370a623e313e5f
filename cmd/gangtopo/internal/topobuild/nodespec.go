package topobuild

import (
	"fmt"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/discovery"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// ModelMap overrides the short model discovery derived from an NVML name:
// "NVIDIA A100-SXM4-80GB" -> "a100-80g" where a cluster has both sizes.
type ModelMap map[string]string

// MemoryRoundMiB is what node memory is rounded down to, so identical
// servers whose kernels reserve slightly different amounts share one
// hardware profile. Slurm's RealMemory should not exceed what the node
// has, so rounding is down.
const MemoryRoundMiB = 1024

// NodeSpec converts a node map into the topology model's NodeSpec: GPUs
// with model, memory, PCI bus id, NUMA node and PCIe switch; the NVLink
// matrix (nil when the node has no NVLink); the physical RDMA NICs with
// the GPUs they are nearest to. It returns warnings for facts the model
// cannot carry (MIG mode, discovery warnings).
func NodeSpec(m *discovery.NodeMap, models ModelMap) (topology.NodeSpec, []string, error) {
	n := topology.NodeSpec{
		Name: m.Node, CPUs: m.Host.CPUs, Weight: 1,
		MemoryMiB: m.Host.MemoryMiB / MemoryRoundMiB * MemoryRoundMiB,
	}
	if m.Host.ThreadsPerCore > 1 { // 1 and unknown (0) are the file's default
		n.ThreadsPerCore = m.Host.ThreadsPerCore
	}
	var warns []string
	for _, w := range m.Warnings {
		warns = append(warns, fmt.Sprintf("node %s: %s", m.Node, w))
	}
	for _, g := range m.GPUs {
		model := g.Model
		if o, ok := models[g.Name]; ok {
			model = o
		}
		n.GPUs = append(n.GPUs, topology.GPUSpec{Model: model, MemoryMiB: g.MemoryMiB, PCIBusID: g.PCIBusID, NUMA: g.NUMA, PCIeSwitch: g.PCIeSwitch})
		if g.MIG != discovery.MIGDisabled && g.MIG != discovery.MIGUnsupported {
			warns = append(warns, fmt.Sprintf("node %s: GPU %d has MIG %s; gangtopo places whole GPUs", m.Node, g.Index, g.MIG))
		}
	}
	if anyLinks(m.NVLink.Links) {
		n.Links = m.NVLink.Links
	}
	for _, nic := range m.NICs {
		if nic.VirtualFunction {
			continue
		}
		spec, err := nicSpec(m.Node, nic)
		if err != nil {
			return n, nil, err
		}
		n.NICs = append(n.NICs, spec)
	}
	return n, warns, nil
}

func nicSpec(node string, nic discovery.NIC) (topology.NICSpec, error) {
	s := topology.NICSpec{
		Name: nic.Name, PCIBusID: nic.PCIBusID, NUMA: nic.NUMA, PCIeSwitch: nic.PCIeSwitch,
		LinkLayer: nic.LinkLayer(), RateGbps: nic.RateGbps(), GPUs: nic.NearestGPUs,
	}
	if len(nic.NetDevs) > 0 {
		s.NetDev = nic.NetDevs[0]
	}
	if s.LinkLayer != "InfiniBand" && s.LinkLayer != "Ethernet" {
		return s, fmt.Errorf("node %s: NIC %s has link layer %q (want InfiniBand or Ethernet)", node, nic.Name, s.LinkLayer)
	}
	return s, nil
}

func anyLinks(m [][]int) bool {
	for i := range m {
		for j := range m[i] {
			if i != j && m[i][j] > 0 {
				return true
			}
		}
	}
	return false
}
