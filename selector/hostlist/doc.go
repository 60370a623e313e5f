// Package hostlist expands and compresses Slurm hostlist expressions such as
// "node[01-04,07],gpu-a[1-2]b".
//
// Slurm writes node sets this way everywhere: slurm.conf, topology.conf,
// squeue's NodeList, scontrol's output. gangtopo's cluster files accept the
// same syntax so an administrator can paste from slurm.conf, and the Slurm
// state readers use it to decode what Slurm prints.
//
// Supported: comma-separated terms; each term may contain any number of
// bracket groups; a group is a comma-separated list of numbers or ranges
// "lo-hi". Zero padding is taken from the width of the lower bound, as Slurm
// does ("[08-10]" gives 08, 09, 10). Expansion is bounded (MaxHosts) so a
// typo such as "n[1-100000000]" fails instead of exhausting memory.
//
// Indices reads the related index lists Slurm prints for GPUs and CPUs
// ("0-3,5"), Less orders names as Slurm and administrators read them.
package hostlist
