package topobuild

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// WriteClusterYAML writes a Spec as a v1 cluster file (docs/cluster-file.md).
//
// Nodes with identical hardware (CPUs, memory, GPUs with their PCI
// placement and NVLink matrix, NICs) share one profile, named after its
// GPUs ("h100-x8", then "h100-x8-2" for a second variant; "cpu-only").
// Consecutive nodes of one profile and one partition list become one
// `nodes:` entry with a compressed host list, so reading the file back
// gives the nodes in the same order. The NVLink matrix is written in the
// shortest form that says it exactly: none, nvswitch (all pairs equal),
// pairs (bridged 0-1, 2-3, ...), or the full matrix. header becomes the
// file's leading comment; comments annotate switches and blocks by name.
func WriteClusterYAML(w io.Writer, spec topology.Spec, header string, comments map[string]string) error {
	profiles, names, err := buildProfiles(spec.Nodes)
	if err != nil {
		return err
	}
	root := mapping(
		str("version"), str(topology.FileVersion),
		str("name"), str(spec.Name),
		str("hardware"), profiles,
		str("nodes"), nodeGroups(spec.Nodes, names),
		str("topology"), topologyNode(spec, comments),
	)
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: header, Content: []*yaml.Node{root}}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return enc.Close()
}

// hardwareKey is what makes two nodes the same hardware.
type hardwareKey struct {
	CPUs      int
	Threads   int
	MemoryMiB int64
	GPUs      []topology.GPUSpec
	Links     [][]int
	NICs      []topology.NICSpec
}

// buildProfiles returns the hardware mapping and each node's profile name.
func buildProfiles(nodes []topology.NodeSpec) (*yaml.Node, []string, error) {
	profiles := mapping()
	byKey := map[string]string{}
	used := map[string]bool{}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		k, _ := json.Marshal(hardwareKey{n.CPUs, n.ThreadsPerCore, n.MemoryMiB, n.GPUs, n.Links, n.NICs})
		if name, ok := byKey[string(k)]; ok {
			names[i] = name
			continue
		}
		name := profileName(n, used)
		hw, err := hardwareNode(n)
		if err != nil {
			return nil, nil, err
		}
		byKey[string(k)], used[name], names[i] = name, true, name
		profiles.Content = append(profiles.Content, str(name), hw)
	}
	return profiles, names, nil
}

func profileName(n topology.NodeSpec, used map[string]bool) string {
	base := "cpu-only"
	if len(n.GPUs) > 0 {
		base = fmt.Sprintf("%s-x%d", topology.CanonicalModel(n.GPUs[0].Model), len(n.GPUs))
	}
	name := base
	for i := 2; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name
}

func hardwareNode(n topology.NodeSpec) (*yaml.Node, error) {
	hw := mapping(str("cpus"), num(n.CPUs))
	if n.ThreadsPerCore > 1 {
		hw.Content = append(hw.Content, str("threads_per_core"), num(n.ThreadsPerCore))
	}
	hw.Content = append(hw.Content, str("memory_mib"), num(n.MemoryMiB))
	if len(n.GPUs) > 0 {
		g, err := gpusNode(n)
		if err != nil {
			return nil, err
		}
		hw.Content = append(hw.Content, str("gpus"), g)
	}
	if len(n.NICs) > 0 {
		nics := seq()
		for _, nic := range n.NICs {
			nics.Content = append(nics.Content, nicNode(nic))
		}
		hw.Content = append(hw.Content, str("nics"), nics)
	}
	return hw, nil
}

func gpusNode(n topology.NodeSpec) (*yaml.Node, error) {
	g0 := n.GPUs[0]
	numa, sw, bus := make([]int, len(n.GPUs)), make([]int, len(n.GPUs)), make([]string, len(n.GPUs))
	for i, g := range n.GPUs {
		if topology.CanonicalModel(g.Model) != topology.CanonicalModel(g0.Model) || g.MemoryMiB != g0.MemoryMiB {
			return nil, fmt.Errorf("node %s mixes GPU models or sizes (%s %d MiB and %s %d MiB); a v1 cluster file has one GPU model per node", n.Name, g0.Model, g0.MemoryMiB, g.Model, g.MemoryMiB)
		}
		numa[i], sw[i], bus[i] = g.NUMA, g.PCIeSwitch, g.PCIBusID
	}
	out := mapping(str("count"), num(len(n.GPUs)), str("model"), str(g0.Model), str("memory_mib"), num(g0.MemoryMiB))
	out.Content = append(out.Content, nvlinkNodes(n.Links)...)
	if !allInt(numa, -1) {
		out.Content = append(out.Content, str("numa"), ints(numa))
	}
	if !allInt(sw, -1) {
		out.Content = append(out.Content, str("pcie_switch"), ints(sw))
	}
	if !allStr(bus, "") {
		out.Content = append(out.Content, str("pci_bus_ids"), strs(bus))
	}
	return out, nil
}

// nvlinkNodes picks the shortest exact form of the link matrix.
func nvlinkNodes(links [][]int) []*yaml.Node {
	k := len(links)
	if !anyLinks(links) {
		return []*yaml.Node{str("nvlink"), str("none")}
	}
	if v := links[0][1]; isMesh(links, v) {
		return []*yaml.Node{str("nvlink"), str("nvswitch"), str("links_per_pair"), num(v)}
	}
	if v := links[0][1]; k%2 == 0 && isPairs(links, v) {
		return []*yaml.Node{str("nvlink"), str("pairs"), str("links_per_pair"), num(v)}
	}
	rows := seq()
	for i, r := range links {
		row := append([]int(nil), r...)
		row[i] = -1
		rows.Content = append(rows.Content, ints(row))
	}
	return []*yaml.Node{str("nvlink"), str("matrix"), str("links"), rows}
}

func isMesh(m [][]int, v int) bool {
	for i := range m {
		for j := range m[i] {
			if i != j && m[i][j] != v {
				return false
			}
		}
	}
	return v > 0
}

func isPairs(m [][]int, v int) bool {
	for i := range m {
		for j := range m[i] {
			want := 0
			if i != j && i/2 == j/2 {
				want = v
			}
			if i != j && m[i][j] != want {
				return false
			}
		}
	}
	return v > 0
}

func nicNode(nic topology.NICSpec) *yaml.Node {
	n := mapping(str("name"), str(nic.Name))
	if nic.NetDev != "" {
		n.Content = append(n.Content, str("netdev"), str(nic.NetDev))
	}
	if nic.PCIBusID != "" {
		n.Content = append(n.Content, str("pci_bus_id"), str(nic.PCIBusID))
	}
	n.Content = append(n.Content, str("numa"), num(nic.NUMA), str("pcie_switch"), num(nic.PCIeSwitch),
		str("link_layer"), str(nic.LinkLayer), str("rate_gbps"), num(nic.RateGbps))
	if len(nic.GPUs) > 0 {
		n.Content = append(n.Content, str("gpus"), ints(nic.GPUs))
	}
	n.Style = yaml.FlowStyle
	return n
}

// nodeGroups folds consecutive nodes of one profile and partition list
// into `nodes:` entries.
func nodeGroups(nodes []topology.NodeSpec, profiles []string) *yaml.Node {
	out := seq()
	for i := 0; i < len(nodes); {
		j := i + 1
		for j < len(nodes) && profiles[j] == profiles[i] && fmt.Sprint(nodes[j].Partitions) == fmt.Sprint(nodes[i].Partitions) &&
			fmt.Sprint(nodes[j].Features) == fmt.Sprint(nodes[i].Features) && nodes[j].Weight == nodes[i].Weight {
			j++
		}
		var names []string
		for _, n := range nodes[i:j] {
			names = append(names, n.Name)
		}
		g := mapping(str("names"), str(hostlist.Compress(names)), str("hardware"), str(profiles[i]))
		if len(nodes[i].Partitions) > 0 {
			g.Content = append(g.Content, str("partitions"), strs(nodes[i].Partitions))
		}
		if len(nodes[i].Features) > 0 {
			g.Content = append(g.Content, str("features"), strs(nodes[i].Features))
		}
		if nodes[i].Weight != 1 {
			g.Content = append(g.Content, str("weight"), num(nodes[i].Weight))
		}
		out.Content = append(out.Content, g)
		i = j
	}
	return out
}

func topologyNode(spec topology.Spec, comments map[string]string) *yaml.Node {
	if len(spec.Spines) == 0 {
		return mapping(str("leaves"), leavesNode(spec.Leaves, comments))
	}
	spines := seq()
	for _, s := range spec.Spines {
		sn := mapping(str("name"), str(s.Name), str("leaves"), leavesNode(s.Leaves, comments))
		sn.HeadComment = comments[s.Name]
		spines.Content = append(spines.Content, sn)
	}
	return mapping(str("spines"), spines)
}

func leavesNode(leaves []topology.LeafSpec, comments map[string]string) *yaml.Node {
	out := seq()
	for _, l := range leaves {
		ln := mapping(str("name"), str(l.Name))
		if len(l.Nodes) > 0 {
			ln.Content = append(ln.Content, str("nodes"), str(hostlist.Compress(l.Nodes)))
		}
		if len(l.Blocks) > 0 {
			bs := seq()
			for _, b := range l.Blocks {
				bn := mapping(str("name"), str(b.Name), str("nodes"), str(hostlist.Compress(b.Nodes)))
				if !b.NVLink {
					bn.Content = append(bn.Content, str("nvlink"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"})
				}
				bn.Style = yaml.FlowStyle
				bn.LineComment = comments[b.Name]
				bs.Content = append(bs.Content, bn)
			}
			ln.Content = append(ln.Content, str("blocks"), bs)
		}
		if len(l.Blocks) == 0 {
			ln.Style = yaml.FlowStyle
		}
		ln.HeadComment = comments[l.Name]
		out.Content = append(out.Content, ln)
	}
	return out
}

func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv}
}

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func num[T int | int64](v T) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(int64(v), 10)}
}

func ints(xs []int) *yaml.Node {
	n := seq()
	for _, x := range xs {
		n.Content = append(n.Content, num(x))
	}
	n.Style = yaml.FlowStyle
	return n
}

func strs(xs []string) *yaml.Node {
	n := seq()
	for _, x := range xs {
		n.Content = append(n.Content, str(x))
	}
	n.Style = yaml.FlowStyle
	return n
}

func allInt(xs []int, v int) bool {
	for _, x := range xs {
		if x != v {
			return false
		}
	}
	return true
}

func allStr(xs []string, v string) bool {
	for _, x := range xs {
		if x != v {
			return false
		}
	}
	return true
}
