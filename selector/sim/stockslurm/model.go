package stockslurm

import (
	"cmp"
	"slices"
	"sync"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Options select the Slurm configuration being modelled. The zero value
// is select/cons_tres with CR_Core and no topology plugin.
type Options struct {
	// Tree turns on TopologyPlugin=topology/tree with the switches of the
	// cluster's leaves and spines (the "slurm" baseline). Without it the
	// model is Slurm without a topology plugin ("slurm-flat").
	Tree bool
	// SwitchesFromTier maps a request's required leaf tier onto
	// --switches=1. Off, the tier is ignored, as stock Slurm ignores the
	// --gang-topology option it does not know.
	SwitchesFromTier bool
	// LinksWithoutAffinity lets gres.conf Links= steer GPU picks on nodes
	// whose GPUs have no socket affinity (no Cores=). Slurm 22.05.8 did not
	// use the links there (reference ref2: lowest free indices in 21/21
	// picks), so the default leaves it off.
	LinksWithoutAffinity bool
	// NoCores models a gres.conf without Cores= (and without AutoDetect),
	// like the lab and reference clusters: the GPUs' NUMA nodes in the
	// cluster file are then not known to Slurm, so no GPU has socket
	// affinity (and, per the above, Links= are not used either).
	NoCores bool
	// NodeFeatures, by NodeID, are the features slurm.conf gives each node
	// (what a job's --constraint is matched against). nil: the cluster
	// file's node features.
	NodeFeatures [][]string
}

// Model is stock Slurm 22.05's choice of nodes and GPU indices for one
// cluster. It holds only static facts; every Place reads the snapshot
// afresh, so a Model may be shared by concurrent placements.
type Model struct {
	c     *topology.Cluster
	opts  Options
	order []topology.NodeID // Slurm node index -> NodeID (slurm.conf order)
	idx   []int             // NodeID -> Slurm node index
	sw    *switchTable      // nil without topology/tree
	hw    []nodeHW          // by Slurm node index
	// sockOff[i] is where node i's sockets start in the per-socket
	// scratch arrays of an evaluation; sockTotal sizes them.
	sockOff   []int
	sockTotal int
	pool      sync.Pool         // *eval scratch space, reused across decisions
	feat      []map[string]bool // node features by Slurm index
	matches   matchSets         // which nodes each constraint allows (nodeset.go)
	ablate    ablation          // rules switched off by tests; always 0 otherwise
}

// ablation switches single rules of the model off, so that the reference
// test can show which rules the recorded data pins down.
type ablation uint8

const (
	ablateWeightByte  ablation = 1 << iota // no near-GPU byte in the weight
	ablateLinkPrune                        // _set_job_bits1 takes the lowest GPUs
	ablateNodeLinks                        // _set_node_bits ignores links
	ablateSocketOrder                      // sockets in index order
)

// nodeHW is what gres.conf and slurm.conf say about one node's GPUs.
type nodeHW struct {
	sockets      int
	coresPerSock int
	gpuSock      []int // socket of each local GPU; -1: any socket (no Cores=)
	links        bool  // Links= is in effect for GPU picks
}

// New returns the model of Slurm on cluster c.
func New(c *topology.Cluster, opts Options) *Model {
	m := &Model{c: c, opts: opts, idx: make([]int, len(c.Nodes))}
	m.order = make([]topology.NodeID, len(c.Nodes))
	for i := range m.order {
		m.order[i] = topology.NodeID(i)
	}
	slices.SortStableFunc(m.order, func(a, b topology.NodeID) int {
		return cmp.Compare(c.Nodes[a].Order, c.Nodes[b].Order)
	})
	m.hw = make([]nodeHW, len(c.Nodes))
	m.sockOff = make([]int, len(c.Nodes))
	for i, id := range m.order {
		m.idx[id] = i
		m.hw[i] = hardware(&c.Nodes[id], c, opts)
		m.sockOff[i] = m.sockTotal
		m.sockTotal += m.hw[i].sockets
	}
	if opts.Tree {
		m.sw = newSwitchTable(c, m.idx)
	}
	m.feat = make([]map[string]bool, len(c.Nodes))
	for i, id := range m.order {
		fs := c.Nodes[id].Features
		if opts.NodeFeatures != nil {
			fs = opts.NodeFeatures[id]
		}
		m.feat[i] = setOf(fs)
	}
	return m
}

// NewTree is the "slurm" baseline: topology/tree.
func NewTree(c *topology.Cluster) *Model { return New(c, Options{Tree: true}) }

// NewFlat is the "slurm-flat" baseline: no topology plugin.
func NewFlat(c *topology.Cluster) *Model { return New(c, Options{}) }

// Name is the policy's name in the simulator: "slurm" with topology/tree,
// "slurm-flat" without.
func (m *Model) Name() string {
	if m.opts.Tree {
		return "slurm"
	}
	return "slurm-flat"
}

// hardware derives a node's sockets from its GPUs' NUMA nodes: each
// distinct NUMA node is one socket holding an equal share of the CPUs, as
// Cores= written by NVML autodetection would say. A node whose GPUs all sit
// on one NUMA node, or with any GPU of unknown NUMA, has no affinity.
func hardware(n *topology.Node, c *topology.Cluster, opts Options) nodeHW {
	k := n.NumGPUs()
	h := nodeHW{sockets: 1, coresPerSock: n.CPUs, gpuSock: make([]int, k)}
	var numas []int
	for i := 0; i < k; i++ {
		numa := c.GPUs[n.GPU(i)].NUMA
		if numa < 0 || opts.NoCores || n.CPUs == 0 {
			numas = nil
			break
		}
		if !slices.Contains(numas, numa) {
			numas = append(numas, numa)
		}
	}
	slices.Sort(numas)
	for i := range h.gpuSock {
		h.gpuSock[i] = -1
		if len(numas) > 1 {
			h.gpuSock[i] = slices.Index(numas, c.GPUs[n.GPU(i)].NUMA)
		}
	}
	if len(numas) > 1 {
		h.sockets, h.coresPerSock = len(numas), n.CPUs/len(numas)
	}
	h.links = hasLinks(n) && (len(numas) > 1 || opts.LinksWithoutAffinity)
	return h
}

func hasLinks(n *topology.Node) bool {
	for a := 0; a < n.NumGPUs(); a++ {
		for b := a + 1; b < n.NumGPUs(); b++ {
			if n.Links(a, b) > 0 {
				return true
			}
		}
	}
	return false
}

// Place is the simulator's Policy method: where stock Slurm would start
// the request now, or false when it would stay pending (or cannot be
// expressed in Slurm's terms).
func (m *Model) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	j, err := FromRequest(r, m.opts.SwitchesFromTier)
	if err != nil {
		return occupancy.Allocation{}, false
	}
	a, ok, err := m.PlaceJob(s, &j)
	return a, ok && err == nil
}
