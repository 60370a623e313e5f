package topology

// Spec is a cluster described as plain data: what the YAML file holds once
// hardware profiles and host lists are expanded, and what code (fixtures,
// the trace simulator, the discovery daemon) writes directly. Build turns a
// Spec into a Cluster after checking it.
//
// Every spec struct has an At field: where it came from ("cluster.yaml:42"),
// used as the prefix of Build's error messages. It may be empty.
type Spec struct {
	Name string
	At   string `json:"-"` // the file, for errors that concern the whole cluster
	// Nodes in declaration order; this order is Slurm's node order.
	Nodes []NodeSpec
	// Spines, each with its leaves. A cluster without spines lists its
	// leaves in Leaves instead; using both is an error.
	Spines []SpineSpec
	Leaves []LeafSpec
}

// SpineSpec is one spine switch and the leaves below it.
type SpineSpec struct {
	Name   string
	At     string `json:"-"`
	Leaves []LeafSpec
	// Oversubscription is the ratio of the spine's bandwidth down to its
	// leaves to its bandwidth up to the core (traffic between spines); 0
	// means 1, non-blocking. Left out of the hash when 0.
	Oversubscription float64 `json:",omitempty"`
}

// LeafSpec is one leaf switch with its nodes: directly in Nodes, or grouped
// into NVLink blocks.
type LeafSpec struct {
	Name   string
	At     string `json:"-"`
	Nodes  []string
	Blocks []BlockSpec
	// Oversubscription is the ratio of the leaf's bandwidth down to its
	// nodes to its bandwidth up to the spines; 0 means 1, non-blocking.
	// Left out of the hash when 0.
	Oversubscription float64 `json:",omitempty"`
}

// BlockSpec is a multi-node domain inside a leaf. NVLink says whether its
// nodes share an NVLink fabric (an NVL72 rack); blocks are usually that.
type BlockSpec struct {
	Name   string
	At     string `json:"-"`
	Nodes  []string
	NVLink bool
}

// NodeSpec is one server.
type NodeSpec struct {
	Name     string
	At       string `json:"-"`
	Hardware string
	CPUs     int
	// ThreadsPerCore is the hardware threads per core behind CPUs (Slurm
	// numbers cores, CPUs/ThreadsPerCore of them); 0 means 1. Left out of
	// the hash when 0, so files without it keep theirs.
	ThreadsPerCore int `json:",omitempty"`
	MemoryMiB      int64
	Partitions     []string
	Features       []string
	Weight         int
	GPUs           []GPUSpec
	// Links[i][j] is the NVLink count between local GPUs i and j; nil means
	// no NVLink. It must be square, len(GPUs) wide and symmetric; the
	// diagonal is ignored (nvidia-smi and gres.conf write -1 there).
	Links [][]int
	NICs  []NICSpec
	// NVLinkGBs and PCIeGBs are each GPU's NVLink and PCIe bandwidth (GB/s,
	// one direction); 0 takes the GPU model's default (DefaultSpeeds).
	// Left out of the hash when 0, so files without them keep theirs.
	NVLinkGBs float64 `json:",omitempty"`
	PCIeGBs   float64 `json:",omitempty"`
	// DenseTFLOPS is each GPU's peak dense 16-bit tensor rate; 0 takes the
	// model's default. Left out of the hash when 0.
	DenseTFLOPS float64 `json:",omitempty"`
}

// GPUSpec is one GPU of a node; its index is its position in NodeSpec.GPUs.
type GPUSpec struct {
	Model      string
	MemoryMiB  int64
	PCIBusID   string
	NUMA       int
	PCIeSwitch int
}

// NICSpec is one RDMA-capable network adapter.
type NICSpec struct {
	Name       string
	NetDev     string
	PCIBusID   string
	NUMA       int
	PCIeSwitch int
	LinkLayer  string
	RateGbps   int
	GPUs       []int // local GPU indices the NIC is nearest to
}
