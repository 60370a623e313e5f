package topology

import (
	"fmt"
	"strings"
)

// NodeID numbers a node densely, 0..len(Cluster.Nodes)-1, in tree order.
type NodeID int32

// GPUID numbers a GPU densely across the cluster, in tree order.
type GPUID int32

// DomainID numbers a domain densely; DomainID 0 is the cluster root.
type DomainID int32

// ModelID numbers the GPU models of a cluster (index into Cluster.Models).
type ModelID uint8

// NoDomain marks an absent ancestor (a node outside any block, a cluster
// without spines).
const NoDomain DomainID = -1

// MaxModels is how many distinct GPU models one cluster may have, so a set
// of models fits in a ModelSet.
const MaxModels = 64

// ModelSet is a set of ModelIDs. The zero value is the empty set.
type ModelSet uint64

// Has reports whether m is in the set.
func (s ModelSet) Has(m ModelID) bool { return s&(1<<m) != 0 }

// With returns the set plus m.
func (s ModelSet) With(m ModelID) ModelSet { return s | 1<<m }

// Cluster is the immutable topology of one cluster generation. Build one
// with Build or Parse; never modify it afterwards (it is shared by
// concurrent placements).
type Cluster struct {
	Name       string
	Models     []string // ModelID -> canonical lower-case name, e.g. "h100"
	Partitions []string // partition index -> name, in order of first use
	Domains    []Domain // DomainID -> domain; Domains[0] is the root
	Nodes      []Node   // NodeID -> node, depth-first tree order
	GPUs       []GPU    // GPUID -> GPU, grouped by node
	// ByTier lists the domains of each tier in tree order. ByTier[TierNode]
	// has one domain per node, ByTier[TierNVLink] one per island.
	ByTier [NumTiers][]DomainID
	// Hash identifies this topology's content (sha256 of its spec); an
	// occupancy snapshot records the hash it was made against.
	Hash string

	nodeByName   map[string]NodeID
	domainByName map[string]DomainID
	modelByName  map[string]ModelID
	partByName   map[string]int
}

// Domain is one subtree: the cluster, a spine, a leaf, a block, a node or an
// NVLink island inside a node.
type Domain struct {
	ID       DomainID
	Name     string
	Tier     Tier
	Parent   DomainID   // NoDomain for the root
	Children []DomainID // sub-domains, tree order
	// NodeLo and NodeHi bound the domain's nodes: [NodeLo, NodeHi). For an
	// island, the one node that holds it.
	NodeLo, NodeHi NodeID
	// GPUs in the domain. For tiers above the node they are the contiguous
	// range [GPULo, GPUHi); an island lists its GPUs in IslandGPUs because
	// an island need not be contiguous.
	GPULo, GPUHi GPUID
	IslandGPUs   []GPUID
	// NVLink is true for a block whose nodes share an NVLink fabric, and for
	// islands of more than one GPU.
	NVLink bool
	// Oversubscription is, for a leaf or a spine, the ratio of its
	// bandwidth down to its bandwidth up (1: non-blocking); 0 for the
	// other tiers.
	Oversubscription float64
}

// NumGPUs is the number of GPUs in the domain.
func (d *Domain) NumGPUs() int {
	if d.Tier == TierNVLink {
		return len(d.IslandGPUs)
	}
	return int(d.GPUHi - d.GPULo)
}

// NumNodes is the number of nodes in the domain.
func (d *Domain) NumNodes() int { return int(d.NodeHi - d.NodeLo) }

// Node is one server.
type Node struct {
	ID       NodeID
	Name     string
	Hardware string // the hardware profile it was built from, if any
	CPUs     int
	// ThreadsPerCore is the hardware threads per core (at least 1):
	// Slurm's core count is CPUs / ThreadsPerCore.
	ThreadsPerCore int
	MemoryMiB      int64
	Partitions     []int // indices into Cluster.Partitions
	Features       []string
	Weight         int // Slurm node weight (lower is preferred by stock Slurm)
	Order          int // position in the declared node list (Slurm's node order)
	GPULo          GPUID
	GPUHi          GPUID
	Islands        []DomainID
	Models         ModelSet // models of the node's GPUs
	// Up[t] is the node's ancestor of tier t (the node's own domain for
	// TierNode, the root for TierCluster), or NoDomain.
	Up   [NumTiers]DomainID
	NICs []NIC
	// Speeds are its GPUs' link speeds: the cluster file's, the rest from
	// the GPU model's reference system (DefaultSpeeds). SpeedsAssumed says
	// some came from a row of that table marked as an assumption.
	Speeds        Speeds
	SpeedsAssumed bool
	// links is the NVLink count matrix, row-major over local GPU indices.
	links []uint8
}

// NumGPUs is the number of GPUs in the node.
func (n *Node) NumGPUs() int { return int(n.GPUHi - n.GPULo) }

// GPU returns the GPUID of the node's local GPU index i.
func (n *Node) GPU(i int) GPUID { return n.GPULo + GPUID(i) }

// Links returns the number of NVLinks between local GPUs a and b (0 when
// they are joined only through PCIe, or a == b).
func (n *Node) Links(a, b int) int {
	k := n.NumGPUs()
	if a == b || a < 0 || b < 0 || a >= k || b >= k {
		return 0
	}
	return int(n.links[a*k+b])
}

// InBlock reports whether the node belongs to a multi-node NVLink block.
func (n *Node) InBlock() bool { return n.Up[TierBlock] != NoDomain }

// GPU is one accelerator.
type GPU struct {
	ID         GPUID
	Node       NodeID
	Index      int // local index: the GRES index Slurm uses (nvidia<Index>)
	Model      ModelID
	MemoryMiB  int64
	PCIBusID   string
	NUMA       int // NUMA node of the GPU's PCIe root (-1 unknown)
	PCIeSwitch int // PCIe switch the GPU sits behind (-1 unknown): GPUs behind one switch talk without the host bridge
	Island     DomainID
	NICs       []int // indices into the node's NICs, nearest first
}

// NIC is a network adapter used for inter-node traffic (InfiniBand or RoCE).
type NIC struct {
	Name       string // RDMA device name, e.g. mlx5_0 (what NCCL_IB_HCA takes)
	NetDev     string // kernel net device, e.g. ibp12s0, if known
	PCIBusID   string
	NUMA       int
	PCIeSwitch int
	LinkLayer  string // "InfiniBand" or "Ethernet"
	RateGbps   int
	GPUs       []int // local GPU indices this NIC is nearest to
}

// NodeByName looks a node up by name.
func (c *Cluster) NodeByName(name string) (NodeID, bool) {
	id, ok := c.nodeByName[name]
	return id, ok
}

// DomainByName looks a domain (spine, leaf, block, node) up by name.
func (c *Cluster) DomainByName(name string) (DomainID, bool) {
	id, ok := c.domainByName[name]
	return id, ok
}

// ModelByName looks a GPU model up, ignoring case ("H100" == "h100").
func (c *Cluster) ModelByName(name string) (ModelID, bool) {
	id, ok := c.modelByName[CanonicalModel(name)]
	return id, ok
}

// PartitionByName returns a partition's index.
func (c *Cluster) PartitionByName(name string) (int, bool) {
	i, ok := c.partByName[name]
	return i, ok
}

// HasTier reports whether the cluster has at least one domain of tier t.
// Node, NVLink and cluster tiers always exist; spines and blocks are
// optional, and a cluster without spines has none.
func (c *Cluster) HasTier(t Tier) bool {
	return int(t) < NumTiers && len(c.ByTier[t]) > 0
}

// PresentTiers lists the tiers the cluster has, tightest first.
func (c *Cluster) PresentTiers() []Tier {
	var out []Tier
	for _, t := range Tiers() {
		if c.HasTier(t) {
			out = append(out, t)
		}
	}
	return out
}

// NVLinkDomain returns the NVLink domain of a GPU: the block if the GPU's node
// is in an NVLink block, else the GPU's island.
func (c *Cluster) NVLinkDomain(g GPUID) DomainID {
	n := &c.Nodes[c.GPUs[g].Node]
	if b := n.Up[TierBlock]; b != NoDomain && c.Domains[b].NVLink {
		return b
	}
	return c.GPUs[g].Island
}

// LargestNVLinkDomain is the GPU count of the biggest NVLink domain.
func (c *Cluster) LargestNVLinkDomain() int {
	best := 0
	for _, id := range c.ByTier[TierNVLink] {
		best = max(best, c.Domains[id].NumGPUs())
	}
	for _, id := range c.ByTier[TierBlock] {
		if d := &c.Domains[id]; d.NVLink {
			best = max(best, d.NumGPUs())
		}
	}
	return best
}

// NumGPUs is the number of GPUs in the cluster.
func (c *Cluster) NumGPUs() int { return len(c.GPUs) }

// ModelName returns a model's name.
func (c *Cluster) ModelName(m ModelID) string { return c.Models[m] }

// ModelNames returns the names in a set, in ModelID order.
func (c *Cluster) ModelNames(s ModelSet) []string {
	var out []string
	for i, n := range c.Models {
		if s.Has(ModelID(i)) {
			out = append(out, n)
		}
	}
	return out
}

// CanonicalModel is how model names are compared: lower case, trimmed, so
// Slurm's typed GRES "h100" matches a cluster file's "H100".
func CanonicalModel(name string) string {
	return strings.ToLower(strings.TrimSpace(name))
}

// String summarises the cluster for logs.
func (c *Cluster) String() string {
	return fmt.Sprintf("cluster %s: %d nodes, %d GPUs, %d leaves", c.Name, len(c.Nodes), len(c.GPUs), len(c.ByTier[TierLeaf]))
}
