// Package place is gangtopo's placement engine: given a cluster topology,
// an occupancy snapshot and a request, it returns where the whole gang goes,
// or why it cannot go anywhere now (a Result, never a partial placement).
//
// The pipeline, run by Engine.Place:
//
//	resolve   request -> candidate models, share, per-GPU CPU/memory,
//	          partition and node lists (invalid requests stop here)
//	filter    every node -> usable GPUs per model (0 with a counted reason:
//	          state, partition, excluded, model, no free GPU, CPU, memory)
//	tiers     from the tightest tier up to the requested one (Required),
//	          or on to the whole cluster (Preferred): nvlink, node for a
//	          job that fits one node; block, leaf, spine, cluster for gangs
//	fit       each domain of the tier -> a concrete candidate (which nodes,
//	          how many GPUs each) or a rejection
//	score     each candidate -> Score (see score.go), compared
//	          lexicographically: nodes used, leaves spanned, fragmentation
//	          increase, then packing tie-breaks
//	select    the best candidate of the tightest tier that has any; its
//	          GPUs are chosen per node by package intranode
//	explain   rejected counts, the best candidates with their scores, and
//	          for a request that fails even on an empty cluster, why it can
//	          never fit and what would
//
// Tightness dominates: a gang that fits one leaf is never spread over two,
// whatever the fragmentation says. Among domains of the same tier, the
// fragmentation objective of package frag decides: the expected loss of
// schedulable capacity for the typical workload, including gang shapes
// measured per leaf, so small jobs fill holes and leave whole nodes (and
// whole leaves) whole.
//
// An Engine holds caches and is not safe for concurrent use; the Slurm
// plugin makes one call at a time, the simulator one engine per worker.
package place
