// Package nodefile writes and reads the per-node file that the SPANK
// plugin's remote context (c/spank_remote.c, inside slurmstepd) reads to
// export NCCL_IB_HCA and the GANGTOPO_* placement variables. One file per
// node, named after the node, in one directory (nodefile_dir= in
// plugstack.conf; default /var/lib/gangtopo/nodes):
//
//	gangtopo-node v1
//	node node01
//	domain leaf leaf1
//	domain spine spine1
//	domain any lab16
//	nvlink node01/nvl0 0-7
//	nic mlx5_0 0-1
//
// Lines: "node NAME"; "domain TIER NAME" for each domain above the node,
// tightest first (block, leaf, spine, then any: the cluster); "nvlink
// NAME GPUS" for each NVLink island of the node; "nic NAME [GPUS]" for
// each RDMA NIC with the local GPUs it is nearest to. '#' starts a
// comment. The C parser (c/gangtopo_nodefile.c) is the reference reader;
// Parse here mirrors it for tests and tools.
//
// This package is the format's only Go implementation. The node daemon
// (gangtopo daemon --role node) builds a File from live discovery
// (cmd/gangtopo/internal/discovery), takes its domain lines from DomainsOf
// and renders it here; FromCluster builds every node's File from a cluster
// file alone (tests/slurmlab writes those for its lab). Writing files is
// the callers' business: the daemon publishes atomically
// (cmd/gangtopo/internal/publish).
package nodefile
