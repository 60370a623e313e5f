// Package intranode chooses which GPUs of one node a job gets.
//
// The chosen set should be as well connected as possible and the GPUs left
// behind as useful as possible for the next jobs. Candidate sets are
// compared lexicographically, most important first:
//
//  1. NVLink islands spanned (fewer): a set inside one island talks over
//     NVLink only;
//  2. NVLinks between chosen pairs (more): on a DGX-1 hybrid cube mesh, pairs
//     have 0, 1 or 2 links; on NVSwitch every pair has the same count, so
//     this never separates NVSwitch sets and they are judged on the rest;
//  3. NUMA nodes spanned, then PCIe switches spanned (fewer);
//  4. for multi-node jobs, chosen GPUs that have a NIC of their own nearby
//     (more);
//  5. what stays behind (better): whole free islands, then whole free NUMA
//     nodes, then whole free PCIe switches, then the best NVLink pair left
//     (so a 2-GPU job does not take the last well-linked pair when another
//     fits), then an optional fragmentation measure of the free shares left
//     (the engine passes FGD's, which decides fractional requests);
//  6. lowest GPU indices, so the choice is deterministic.
//
// Search is bounded: when the number of candidate subsets C(free, k) is at
// most ExhaustiveLimit they are all scored (an 8-GPU node has at most 70);
// beyond that a greedy search seeded from every free GPU grows sets by best
// connectivity, which costs O(free^2 * k) and never explodes on 64-GPU
// nodes. Slices (every S GPUs in one island) are a hard constraint: a set is
// valid only if each island holds a multiple of S of its GPUs.
//
// Links come from the topology (gres.conf Links= or NVML): on NVSwitch
// systems every pair is connected even though NVML's remote PCI ids name
// switches rather than GPUs; the topology package already records that.
package intranode
