// Package topology is gangtopo's static model of a GPU cluster: a tree of
// domains (cluster > spine > leaf > block > node > NVLink island > GPU) with
// the hardware facts placement needs.
//
// A Cluster is built once per topology generation (from a YAML file with
// Parse, or in code with a Builder) and then shared read-only by every
// placement. Nodes, GPUs and domains are numbered with small dense integers
// (NodeID, GPUID, DomainID) so that the per-decision state in package
// occupancy can live in flat arrays indexed by them.
//
// Numbering follows the tree: nodes are numbered in depth-first order of the
// domain tree, so every domain covers one contiguous range of NodeIDs and of
// GPUIDs. A leaf's nodes are Nodes[d.NodeLo:d.NodeHi]; summing a domain's
// free capacity is a loop over a slice, not a map walk.
//
// NVLink islands are derived, not declared: the connected components of a
// node's NVLink graph. On NVSwitch systems every GPU pair is connected, so
// the node is one island; a PCIe server with NVLink bridges has pairs; a
// DGX-1 hybrid cube mesh is one island whose pairs have 0, 1 or 2 links.
// Nodes inside a block (a multi-node NVLink domain such as a GB200 NVL72
// rack) share NVLink across nodes, so for them the NVLink domain of a GPU is
// the block.
package topology
