// Package slurmlab runs a real Slurm GPU cluster on one machine, for
// gangtopo's end-to-end tests, `make demo` and `make bench-slurm`: the
// host's own Slurm (Debian bookworm: 22.05), or a newer series from a
// Debian root (trixie: 24.11, sid: 26.05; Options.Root, root.go,
// series.go).
//
// A Lab is one slurmctld and one slurmd per node of a topology file
// (docs/examples/lab16.yaml: 16 nodes x 8 GPUs, 4 leaves, 2 spines), all on
// 127.0.0.1 with private ports, a private munged, fake GPU device files
// (character devices made with mknod, major 195) and every file under one
// directory. Each slurmd runs in a mount namespace of its own (unshare) in
// which its node-local directory <dir>/local/<node>/nodes is bound over
// <dir>/nodes, the SPANK plugin's nodefile_dir: node files are node-local
// as on a real cluster. It needs root and Debian's Slurm packages;
// EnsurePackages installs them with apt-get when they are missing (the
// host series), `make roots` the Debian roots.
//
// Life cycle: Start writes the configuration, starts munged, slurmctld and
// the slurmds, and waits until every node is idle. Stop tears everything
// down by PID: SIGTERM, then SIGKILL after a grace period. Every process the
// lab starts carries GANGTOPO_LAB=<dir> in its environment, and so do the
// job steps they fork, so Stop also finds and kills the slurmstepd and task
// processes a job left behind (slurmstepd renames itself and is re-parented
// to init, so neither its name nor its parent identifies it). The PIDs are
// also written to <dir>/run/pids so another process (slurmlab down) can stop
// a lab it did not start.
//
// The traps this package works around are recorded in
// ../shared/SLURM-LAB.md; the comments below point at them.
package slurmlab
