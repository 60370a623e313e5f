package stepcost

import (
	"math"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// Bandwidth of a collective over a group of GPUs.
//
// Each collective runs at the pace of its slowest link, in GB/s of NCCL's
// bus bandwidth (the figure nccl-tests reports, so that an all-reduce of
// S bytes over n GPUs takes 2(n-1)/n x S / bandwidth):
//
//   - inside one NVLink island (or NVLink block): the GPUs' NVLink;
//   - inside one server across islands: PCIe through the host;
//   - across servers, a ring leaves each server once per channel, and
//     NCCL runs one channel per GPU of the group on the server, each on
//     that GPU's NIC: the server contributes k x NIC for its k GPUs of the
//     group, and the slowest server paces the ring (two whole DGX H100
//     reach 8 x 50 = 400 GB/s, what nccl-tests shows for them; eight
//     servers with one GPU each reach 50);
//   - traffic that leaves a leaf shares its uplinks: divided by the leaf's
//     oversubscription, and by the spine's as well when it leaves the
//     spine (the fabric is taken as busy, as it is when the cluster is).

// gpu is one GPU of a layout: where it is.
type gpu struct {
	node   topology.NodeID
	island topology.DomainID
}

// where is what a group of GPUs spans.
type where struct {
	nodes []nodeCount // in order of first appearance
	// block is the NVLink block holding every GPU, or NoDomain.
	block topology.DomainID
}

// nodeCount is a node's GPUs in a group, and whether they share an island.
type nodeCount struct {
	node       topology.NodeID
	k          int
	oneIsland  bool
	lastIsland topology.DomainID
}

// span finds what group g spans.
func span(c *topology.Cluster, g []gpu) where {
	w := where{block: topology.NoDomain}
	for i, x := range g {
		j := 0
		for j < len(w.nodes) && w.nodes[j].node != x.node {
			j++
		}
		if j == len(w.nodes) {
			w.nodes = append(w.nodes, nodeCount{node: x.node, oneIsland: true, lastIsland: x.island})
		}
		nc := &w.nodes[j]
		nc.k++
		nc.oneIsland = nc.oneIsland && nc.lastIsland == x.island
		b := c.Nodes[x.node].Up[topology.TierBlock]
		if b == topology.NoDomain || !c.Domains[b].NVLink {
			b = topology.NoDomain
		}
		if i == 0 {
			w.block = b
		} else if w.block != b {
			w.block = topology.NoDomain
		}
	}
	return w
}

// intra is the bandwidth among a node's GPUs of a group: NVLink when they
// share an island with NVLink, else PCIe.
func intra(c *topology.Cluster, nc nodeCount) float64 {
	s := &c.Nodes[nc.node].Speeds
	if nc.oneIsland && s.NVLinkGBs > 0 {
		return s.NVLinkGBs
	}
	return s.PCIeGBs
}

// blockNVLink is the slowest NVLink of the nodes of a block-wide group.
func blockNVLink(c *topology.Cluster, w where) float64 {
	bw := math.Inf(1)
	for _, nc := range w.nodes {
		bw = min(bw, c.Nodes[nc.node].Speeds.NVLinkGBs)
	}
	return bw
}

// oversubscription is what a group's traffic between its servers is
// divided by: 1 inside one leaf; the largest ratio of its leaves when it
// spans leaves of one spine (or of a cluster without spines); that times
// the largest of its spines' when it spans spines.
func oversubscription(c *topology.Cluster, w where) float64 {
	first := &c.Nodes[w.nodes[0].node]
	leaf, spine := first.Up[topology.TierLeaf], first.Up[topology.TierSpine]
	leafOver, spineOver := 1.0, 1.0
	sameLeaf, sameSpine := true, true
	for _, nc := range w.nodes {
		n := &c.Nodes[nc.node]
		sameLeaf = sameLeaf && n.Up[topology.TierLeaf] == leaf
		sameSpine = sameSpine && n.Up[topology.TierSpine] == spine
		leafOver = max(leafOver, c.Domains[n.Up[topology.TierLeaf]].Oversubscription)
		if s := n.Up[topology.TierSpine]; s != topology.NoDomain {
			spineOver = max(spineOver, c.Domains[s].Oversubscription)
		}
	}
	switch {
	case sameLeaf:
		return 1
	case sameSpine:
		return leafOver
	}
	return leafOver * spineOver
}

// ring is the bus bandwidth of an all-reduce over group g (+Inf for a
// group of one: nothing to send).
func ring(c *topology.Cluster, g []gpu) float64 {
	if len(g) < 2 {
		return math.Inf(1)
	}
	w := span(c, g)
	switch {
	case len(w.nodes) == 1:
		return intra(c, w.nodes[0])
	case w.block != topology.NoDomain:
		return blockNVLink(c, w)
	}
	bw := math.Inf(1)
	for _, nc := range w.nodes {
		bw = min(bw, float64(nc.k)*c.Nodes[nc.node].Speeds.NICGBs)
		if nc.k > 1 {
			bw = min(bw, intra(c, nc))
		}
	}
	return bw / oversubscription(c, w)
}

// pair is the bandwidth of a send from a to b.
func pair(c *topology.Cluster, a, b gpu) float64 {
	return ring(c, []gpu{a, b})
}

// allToAll is the bus bandwidth of an all-to-all over group g: each GPU
// sends 1/E of its data to each other GPU, the part for its own server
// over NVLink (or PCIe) and the rest over its NIC, both at once; the
// slowest GPU paces the exchange, which moves (E-1)/E of the data.
func allToAll(c *topology.Cluster, g []gpu) float64 {
	e := float64(len(g))
	if e < 2 {
		return math.Inf(1)
	}
	w := span(c, g)
	over := 1.0
	if len(w.nodes) > 1 && w.block == topology.NoDomain {
		over = oversubscription(c, w)
	}
	worst := 0.0
	for _, nc := range w.nodes {
		inside := (float64(nc.k) - 1) / e / intra(c, nc)
		outBW := c.Nodes[nc.node].Speeds.NICGBs / over
		if w.block != topology.NoDomain {
			outBW = blockNVLink(c, w)
		}
		outside := (e - float64(nc.k)) / e / outBW
		worst = max(worst, inside, outside)
	}
	return (e - 1) / e / worst
}
