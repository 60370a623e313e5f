// Package slurmscale measures gangtopo inside a real Slurm at the size of
// the sites it is for (issue 24): a lab of hundreds to a thousand emulated
// nodes (tests/slurmlab), a backlog of thousands of jobs, and, side by side
// in one run, Slurm with the gangtopo plugins and without them.
package slurmscale
