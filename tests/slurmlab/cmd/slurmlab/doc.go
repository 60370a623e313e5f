// Command slurmlab starts and stops the local Slurm lab of tests/slurmlab
// outside a test: make demo, make demo-stop and make bench-slurm use it.
//
//	slurmlab up   --dir DIR [--topology FILE] [--port N] [--plugins DIR --config FILE]
//	slurmlab down --dir DIR
//
// up returns once every node is idle and leaves the daemons running; down
// stops them (and any process carrying the lab's GANGTOPO_LAB marker) by
// the PIDs recorded in DIR/run/pids.
package main
