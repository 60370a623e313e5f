// Command slurmbench measures the gangtopo plugins inside a real Slurm
// (the tests/slurmlab cluster) and writes the figures into
// docs/benchmarks.md (make bench-slurm), and records what stock Slurm does
// (make record-reference):
//
//	slurmbench throughput [-n 500]   sbatch throughput with and without the
//	                                 plugins, and the plugin's per-call time
//	                                 as slurmctld logged it
//	slurmbench replay [-runs plain,pernode,plain_off2,pernode_off2] [-stock plain] [-recorded DIR]
//	                                 the stock-Slurm reference sequences of
//	                                 ../shared/data/slurm-22.05-reference
//	                                 replayed with the plugins, against the
//	                                 recorded stock runs (22.05.8's, or a
//	                                 series' own recording)
//	slurmbench record [-runs plain,pernode] [-out DIR]
//	                                 the same sequences through stock Slurm
//	                                 alone, saved as test data in the
//	                                 reference's format (record.go)
//
// Every command runs on the host's Slurm packages, or with -root (default
// $GANGTOPO_SLURM_ROOT) on the Slurm of a Debian root made by make roots
// (trixie: 24.11.5, sid: 26.05.5); each series' figures go beside the
// others' (series.go).
//
// Needs root, make plugins (GANGTOPO_PLUGINS, default build/plugins; built
// against the root's headers for a root) and make build (GANGTOPO_BIN,
// default build/gangtopo: its snapshot command publishes the occupancy the
// plugin reads). record needs neither.
package main
