// Package fgd is the core of gangtopo's trace-driven simulator: it replays
// a list of pods against a cluster, one pod at a time, under a placement
// policy, and records how much GPU capacity ends up allocated and how
// fragmented the rest is. It is pure Go: the caller reads the traces.
//
// The protocol is the one of the FGD paper (Weng et al., USENIX ATC'23) and
// its simulator (hkust-adsl/kubernetes-scheduler-simulator), reproduced
// step by step so that published numbers can be checked:
//
//  1. a random stream is seeded with the run's seed (Go's math/rand, as the
//     FGD simulator uses it); the pods, sorted by name, are shuffled;
//  2. "tune": pods drawn uniformly with replacement are appended until the
//     requested GPU total would pass tune x capacity (1.3 in the paper), or
//     random pods are removed while it is above;
//  3. every node gets a random rank (FGD prefixes node names with a random
//     permutation, and its scheduler breaks score ties by name);
//  4. pods arrive in order and never leave; each is placed by the policy or
//     fails (no queue, no retry);
//  5. after every pod the allocated GPU milli and the cluster's
//     fragmentation (selector/frag, FGD's measure over the typical pods of
//     the workload) are recorded against the arrived GPU milli, and averaged
//     per whole percent of arrived capacity as FGD's merge scripts do.
//
// Policies implement Policy. The six of the paper (Random, DotProd,
// GpuClustering, GpuPacking, BestFit, FGD) are here, built on a small model
// of the Kubernetes scheduling framework the FGD simulator runs (filter,
// integer scores 0..100, highest wins, ties to the lowest rank). Other
// packages add engines (gangtopo's own, a model of Slurm) with Register.
package fgd
