package place

// Score measures one candidate placement. Candidates of the same tier are
// compared field by field in this order; the first difference decides:
//
//	Nodes       nodes used: fewer is the tighter shape (a 16-GPU gang on two
//	            8-GPU nodes beats four half nodes)
//	Spans       leaves spanned (only above leaf tier): fewer
//	LendOpen    for a borrowing request only (PlaceLent, lend.go): lending
//	            domains it opens (blocks, else leaves, holding no borrowed
//	            GPU now): fewer; 0 for every other request
//	LendHeld    for a borrowing request only: borrowed GPUs already held in
//	            the lending domains it uses: more, so borrowed work packs
//	            where a reclaim frees it together
//	FragDelta   increase of the cluster's expected unusable GPU capacity for
//	            the typical workload (package frag), in milli-GPUs: lower.
//	            It is NodeFrag (per node: for single-node jobs the fill
//	            model's expected waste plus FGD's F_n over the multi-GPU
//	            shapes plus the capacity expected to be denied jobs
//	            restricted to the chosen GPU model (scarcity.go), rounded
//	            to 80 milli; FGD's F_n for the nodes of a gang) plus
//	            GangFrag (per leaf or block: whole free nodes usable by
//	            typical gangs)
//	Scarcity    the share of the chosen GPU model's free capacity that
//	            constrained jobs are expected to want (single-node jobs;
//	            scarcity.go): lower, so jobs that may use any model leave
//	            the scarce ones to those that cannot
//	Links       NVLinks inside the chosen GPU set (single-node jobs): more
//	DomainIdle  idle milli-GPUs left in the candidate's leaf (or domain):
//	            lower, so busy leaves fill first and empty ones stay empty
//	FreeAfter   free GPUs left on the chosen nodes: lower (best fit)
//	Order       Slurm order of the first node: lower (deterministic)
//
// Differences in FragDelta below fragEpsilon are ties (floating point).
type Score struct {
	Nodes      int
	Spans      int
	LendOpen   int
	LendHeld   int
	FragDelta  float64
	NodeFrag   float64
	GangFrag   float64
	Scarcity   float64
	Links      int
	DomainIdle int64
	FreeAfter  int
	Order      int
}

const fragEpsilon = 1e-6

// Better reports whether a beats b.
func (a *Score) Better(b *Score) bool {
	switch {
	case a.Nodes != b.Nodes:
		return a.Nodes < b.Nodes
	case a.Spans != b.Spans:
		return a.Spans < b.Spans
	case a.LendOpen != b.LendOpen:
		return a.LendOpen < b.LendOpen
	case a.LendHeld != b.LendHeld:
		return a.LendHeld > b.LendHeld
	case a.FragDelta < b.FragDelta-fragEpsilon:
		return true
	case a.FragDelta > b.FragDelta+fragEpsilon:
		return false
	case a.Scarcity < b.Scarcity-fragEpsilon:
		return true
	case a.Scarcity > b.Scarcity+fragEpsilon:
		return false
	case a.Links != b.Links:
		return a.Links > b.Links
	case a.DomainIdle != b.DomainIdle:
		return a.DomainIdle < b.DomainIdle
	case a.FreeAfter != b.FreeAfter:
		return a.FreeAfter < b.FreeAfter
	}
	return a.Order < b.Order
}
