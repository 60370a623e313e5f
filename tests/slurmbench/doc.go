// Command slurmbench measures the gangtopo plugins inside a real Slurm 22.05
// (the tests/slurmlab cluster) and writes the figures into
// docs/benchmarks.md (make bench-slurm):
//
//	slurmbench throughput [-n 500]   sbatch throughput with and without the
//	                                 plugins, and the plugin's per-call time
//	                                 as slurmctld logged it
//	slurmbench replay [-runs plain,pernode,plain_off2,pernode_off2] [-stock plain]
//	                                 the stock-Slurm reference sequences of
//	                                 ../shared/data/slurm-22.05-reference
//	                                 replayed with the plugins, against the
//	                                 recorded stock runs
//
// Needs root, make plugins (GANGTOPO_PLUGINS, default build/plugins) and
// make build (GANGTOPO_BIN, default build/gangtopo: its snapshot command
// publishes the occupancy the plugin reads).
package main
