package queue

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Policy decides where a whole gang starts now. Place returns the
// allocation for r on snapshot s, or false when r does not fit now (a
// result, not an error). The replay relies on three properties:
//   - Place does not modify s (the replay applies the allocation);
//   - it uses no node whose State is not Usable (backfill reservations are
//     applied by marking the reserved nodes drained for the call);
//   - fit is monotone: a request that does not fit does not fit with fewer
//     free GPUs, and a bigger request of the same kind does not fit
//     either, so one failure per size and pass settles every later try.
//
// selector/sim/fgd (the FGD protocol) and selector/sim/stockslurm use the same
// shape, so the same values serve both simulators. A Policy serves one
// replay and need not be safe for concurrent use.
type Policy interface {
	Name() string
	Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool)
}

// TierHonoring is implemented by policies that never place a request
// whose tier is Required outside one domain of that tier (the engine does;
// stock Slurm ignores the option). The replay then skips Place calls that
// cannot succeed: when no domain of the tier has the GPUs free.
type TierHonoring interface {
	HonorsTier() bool
}

// LendPlacer is implemented by policies that place a job that borrows
// (runs preemptible on lent GPUs) apart from the others: the engine's
// PlaceLent. lent is, by NodeID, the GPUs borrowing jobs hold now.
type LendPlacer interface {
	PlaceLent(s *occupancy.Snapshot, r *request.Request, lent []int) (occupancy.Allocation, bool)
}

// GangTopo is the gangtopo engine (selector/place) as a replay policy.
type GangTopo struct {
	e *place.Engine
}

// NewGangTopo returns the engine on cluster c with the given options.
func NewGangTopo(c *topology.Cluster, opts place.Options) *GangTopo {
	return &GangTopo{e: place.New(c, opts)}
}

// Name is "gangtopo".
func (g *GangTopo) Name() string { return "gangtopo" }

// Place runs the engine.
func (g *GangTopo) Place(s *occupancy.Snapshot, r *request.Request) (occupancy.Allocation, bool) {
	res := g.e.Place(s, *r)
	return res.Alloc, res.Status == place.Placed
}

// PlaceLent runs the engine's lending placement (place.Engine.PlaceLent).
func (g *GangTopo) PlaceLent(s *occupancy.Snapshot, r *request.Request, lent []int) (occupancy.Allocation, bool) {
	res := g.e.PlaceLent(s, *r, place.Lending{Borrowed: lent})
	return res.Alloc, res.Status == place.Placed
}

// HonorsTier is true: the engine keeps a Required gang inside its tier.
func (g *GangTopo) HonorsTier() bool { return true }
