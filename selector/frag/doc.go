// Package frag measures GPU fragmentation: how much of a cluster's idle GPU
// capacity the typical workload could not use.
//
// The node-level measure is FGD's (Weng et al., "Beware of Fragmentation",
// USENIX ATC'23), reproduced exactly: for a node n and a workload M of
// request shapes m with popularity p_m,
//
//	F_n(M) = sum_m p_m * F_n(m)
//	F_n(m) = the node's idle GPU capacity that m cannot use:
//	         if m fits n (enough GPUs with share >= m's, enough CPU, an
//	         allowed model): the idle capacity on GPUs too small for m;
//	         otherwise (and always for CPU-only shapes): all idle capacity.
//
// gangtopo extends it to gangs and tiers. A gang shape g asks for k whole
// nodes inside one domain of a tier (a leaf, a block); a domain D with u
// whole free nodes can start floor(u/k) such gangs, so
//
//	F_D(g) = idle(D) - floor(u/k) * k * gpusPerNode
//
// and the cluster's expected unusable capacity is
//
//	F(M) = sum over node shapes of p_m * sum_n F_n(m)
//	     + sum over gang shapes of p_g * sum_{D of g's tier} F_D(g).
//
// With only single-node shapes this is FGD's cluster fragmentation; with
// gangs it values a leaf holding three whole free nodes above three whole
// nodes scattered over three leaves when 24-GPU gangs are typical, which is
// the point of placing by topology. All amounts are in milli-GPUs.
package frag
