// Package topobuild turns what the node daemons discovered into gangtopo's
// cluster file: it converts node maps (package discovery) into
// selector/topology NodeSpecs, reads the switch topology from a Slurm
// topology.conf or an ibnetdiscover dump, merges the two (multi-node NVLink
// blocks come from the GPUs' fabric cliques), and writes the v1 cluster
// YAML with identical hardware folded into shared profiles.
//
// It is the engine of `gangtopo topology build` and of the controller
// daemon's topology refresh. Everything here reads io.Readers and returns
// values; the command does the file handling.
package topobuild
