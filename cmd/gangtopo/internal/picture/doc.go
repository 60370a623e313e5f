// Package picture draws what gangtopo's commands show as pictures, in one
// place, so that every command and a later HTML report draw the same way:
//
//   - Colors: one colour per policy, by its name (the same policy has the
//     same colour in every plot, whatever the order of -p); variants
//     (+defrag, +quota, +hard) keep their base's colour, dashed.
//   - Chart: a line chart (simulate's unallocated GPUs against arrived
//     workload, replay's wait against load) whose y axis spans the data,
//     not zero to a round maximum, so that a difference of a point shows.
//   - Cluster: the cluster's GPUs grouped by its real domains (spine, leaf,
//     NVLink block such as an NVL72 rack, node), as text or SVG, one cell
//     per GPU, or one per node on large clusters; with marks for what a
//     defragmentation plan requeues and where the gang goes, and a pair of
//     them side by side for before and after.
//
// Everything is written by hand (SVG and text, no dependencies) from plain
// values: the package knows nothing of Slurm, the engine or files.
package picture
