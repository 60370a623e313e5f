package discovery

import (
	"fmt"
	"sort"

	"github.com/gangtopo/gangtopo/spank/nodefile"
)

// NodeFileComment is the comment line (see nodefile.File.RenderWithComment)
// of the node files the node daemon writes from discovery.
const NodeFileComment = "gangtopo node file, written by gangtopo daemon --role node; read by spank_gangtopo.so"

// BuildNodeFile derives the SPANK plugin's node file (format and renderer:
// spank/nodefile) from a node map; domains come from the cluster file (nil
// without one, and the plugin then sets no GANGTOPO_TIER).
//
// nvlink lines are the connected components of the NVLink matrix, named
// <node>/nvl<i> in order of their lowest GPU, as the topology package names
// islands. nic lines list the usable NICs only (a physical function with an
// active port), each with the GPUs for which it is among the nearest usable
// NICs, so a GPU whose own HCA is down is pointed at the next nearest and
// NCCL never at a dead port. Every GPU list is sorted by GPU index.
func BuildNodeFile(m *NodeMap, domains []nodefile.Domain) nodefile.File {
	f := nodefile.File{Node: m.Node, Domains: domains}
	for i, isl := range nvlinkIslands(m.NVLink.Links) {
		var gpus []int
		for _, p := range isl {
			gpus = append(gpus, m.GPUs[p].Index)
		}
		sort.Ints(gpus)
		f.NVLink = append(f.NVLink, nodefile.Set{Name: fmt.Sprintf("%s/nvl%d", m.Node, i), GPUs: gpus})
	}
	serves := make([][]int, len(m.NICs))
	for i, g := range m.GPUs {
		for _, n := range nearest(m.NICPCIe[i], m.NICs, (*NIC).Usable) {
			serves[n] = append(serves[n], g.Index)
		}
	}
	for n := range m.NICs {
		if m.NICs[n].Usable() {
			sort.Ints(serves[n])
			f.NICs = append(f.NICs, nodefile.Set{Name: m.NICs[n].Name, GPUs: serves[n]})
		}
	}
	return f
}

// nvlinkIslands is the connected components of a link matrix by local
// position, each sorted, ordered by their lowest GPU; a GPU without NVLink
// is an island of its own.
func nvlinkIslands(links [][]int) [][]int {
	uf := newUnionFind(len(links))
	for i := range links {
		for j := range links[i] {
			if i != j && links[i][j] > 0 {
				uf.union(i, j)
			}
		}
	}
	at := map[int]int{}
	var out [][]int
	for i := range links {
		r := uf.find(i)
		k, ok := at[r]
		if !ok {
			k = len(out)
			at[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], i)
	}
	return out
}
