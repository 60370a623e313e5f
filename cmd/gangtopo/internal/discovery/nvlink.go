package discovery

import (
	"fmt"
	"strings"
)

// NVLinkResult is the NVLink picture of one node.
type NVLinkResult struct {
	// Links[i][j] is the number of NVLinks usable between GPUs i and j
	// (local positions); the diagonal is 0.
	Links [][]int
	// SwitchLinks[i] is how many of GPU i's links end at an NVSwitch.
	SwitchLinks []int
	// Mode summarises the node: "none", "nvswitch", "direct" (GPU-to-GPU
	// links only: bridges, hybrid cube mesh) or "mixed".
	Mode     string
	Warnings []string
}

// resolveNVLinks turns each GPU's link ends into a GPU-pair link matrix.
//
// Overview. NVML reports, per link, what the far end is. A link whose far
// end is another GPU of this node counts once for that pair; DGX-1 cube
// meshes and NVLink bridges are described this way. A link whose far end is
// an NVSwitch does not name a GPU: the switch's PCI id matches no GPU, so
// tools that match remote PCI ids against GPU ids see zero links on NVSwitch
// systems. The switches form one non-blocking fabric, so every pair of GPUs
// that reach the same fabric is connected, with as many links as the
// lesser-connected GPU of the pair has into it (18 on H100, 12 on A100).
// All switch-attached GPUs of a node are taken to be on one fabric: NVSwitch
// baseboards are built that way, and grouping by the switches' PCI ids is
// not reliable (drivers report zeros or per-port ids for them). Remote ends
// that are CPUs are not GPU links; unknown ends that match no GPU are
// reported as warnings and not counted, rather than guessed.
func resolveNVLinks(busIDs []string, ends [][]NVLinkEnd) NVLinkResult {
	k := len(busIDs)
	r := NVLinkResult{Links: squareInts(k), SwitchLinks: make([]int, k)}
	gpuAt := map[string]int{}
	for i, id := range busIDs {
		gpuAt[id] = i
	}
	direct := false
	for i, links := range ends {
		var unresolved []string
		for _, e := range links {
			kind := e.Remote
			j, isGPU := gpuAt[e.RemoteBusID]
			if kind == RemoteUnknown && isGPU {
				kind = RemoteGPU
			}
			switch {
			case kind == RemoteGPU && isGPU && j != i:
				r.Links[i][j]++
				direct = true
			case kind == RemoteSwitch:
				r.SwitchLinks[i]++
			case kind == RemoteCPU:
				// CPU-GPU NVLink carries no GPU-GPU traffic.
			default:
				unresolved = append(unresolved, fmt.Sprintf("%d:%s(%s)", e.Link, kind, e.RemoteBusID))
			}
		}
		if len(unresolved) > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("GPU %s: %d NVLinks end at neither a GPU of this node nor an NVSwitch and are not counted (link:remote(pci)): %s", busIDs[i], len(unresolved), strings.Join(unresolved, " ")))
		}
	}
	r.Warnings = append(r.Warnings, symmetrize(r.Links, busIDs)...)
	switched := addSwitchLinks(r.Links, r.SwitchLinks)
	r.Mode = nvlinkMode(direct, switched)
	return r
}

// symmetrize makes the direct-link matrix symmetric. Each end of a
// GPU-GPU link reports it, so i->j and j->i should agree; when a driver
// reports only one side, the larger count wins and a warning says so.
func symmetrize(m [][]int, busIDs []string) []string {
	var warns []string
	for i := range m {
		for j := i + 1; j < len(m); j++ {
			if m[i][j] != m[j][i] {
				warns = append(warns, fmt.Sprintf("GPUs %s and %s disagree on their NVLinks (%d vs %d); using %d", busIDs[i], busIDs[j], m[i][j], m[j][i], max(m[i][j], m[j][i])))
				v := max(m[i][j], m[j][i])
				m[i][j], m[j][i] = v, v
			}
		}
	}
	return warns
}

// addSwitchLinks adds, for every pair of switch-attached GPUs, the lesser
// of their switch link counts. It reports whether any were added.
func addSwitchLinks(m [][]int, switchLinks []int) bool {
	added := false
	for i := range m {
		for j := i + 1; j < len(m); j++ {
			if switchLinks[i] == 0 || switchLinks[j] == 0 {
				continue
			}
			v := min(switchLinks[i], switchLinks[j])
			m[i][j] += v
			m[j][i] += v
			added = true
		}
	}
	return added
}

func nvlinkMode(direct, switched bool) string {
	switch {
	case direct && switched:
		return "mixed"
	case switched:
		return "nvswitch"
	case direct:
		return "direct"
	}
	return "none"
}

func squareInts(k int) [][]int {
	m := make([][]int, k)
	for i := range m {
		m[i] = make([]int, k)
	}
	return m
}

type unionFind struct{ parent []int }

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int, n)}
	for i := range u.parent {
		u.parent[i] = i
	}
	return u
}

func (u *unionFind) find(x int) int {
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(a, b int) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if ra > rb {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
}
