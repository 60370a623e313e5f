// Package slurmgen writes the Slurm configuration that matches a gangtopo
// cluster file: topology.conf (topology/tree, or topology/block for Slurm
// 23.11 and later), gres.conf lines with NVLink Links= and NUMA Cores=,
// and the node features (gt_<spine>, gt_<leaf>, gt_<block>, gt_<model>)
// that the job_submit plugin binds gangs with.
//
// Each generator reads a built *topology.Cluster and writes to an
// io.Writer; warnings (things Slurm will accept but that lose information)
// are returned, not printed.
package slurmgen
