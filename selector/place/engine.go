package place

import (
	"fmt"
	"math"
	"strings"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Options configure an Engine. The zero value is usable: every default is
// set in New.
type Options struct {
	// Workload is the typical request mix fragmentation is measured
	// against. Default: frag.PhillyPrior(1).
	Workload *frag.Workload
	// MaxCandidates bounds Result.Candidates and Result.Alternatives.
	// Default 8.
	MaxCandidates int
	// LinkCandidates is how many equally good single-node candidates get
	// their GPU sets compared by NVLink count. Default 4.
	LinkCandidates int
}

// Engine places requests on one cluster. Make a new Engine when the
// topology changes; snapshots can change every call.
type Engine struct {
	c     *topology.Cluster
	opts  Options
	meter *frag.Meter
	// empty is the cluster with everything free, to tell "not now" from
	// "never".
	empty *occupancy.Snapshot
	// deltaMemo caches node fragmentation increases by node signature and
	// request shape, across calls (see nodeDelta).
	deltaMemo map[uint64]float64
	shapeRows map[shapeKey][]deltaSlot // per request shape, by NodeID
	// byModel[m] lists the nodes that have GPUs of model m.
	byModel  [][]topology.NodeID
	allNodes []topology.NodeID
	// maxNodeGPUs is the GPU count of the largest node, maxIsland that of
	// the largest NVLink island inside a node.
	// multiGPU measures FGD's F_n over the workload's multi-GPU node
	// shapes only (their CPUs left to the fill model). The fill model
	// treats a 4-GPU job as four independent GPUs, so it cannot tell a
	// node that keeps four whole GPUs together from one that does not;
	// FGD's "does the shape fit now" can. nil when there are none.
	multiGPU        *frag.Meter
	maxNodeGPUs     int
	maxIsland       int
	hasNVLinkBlocks bool
	// maxBlockNodeGPUs is the GPU count of the largest node in an NVLink
	// block (0 without such blocks): a larger slice spans nodes (span.go).
	maxBlockNodeGPUs int
	// stats caches, per call, the frag statistics of leaves and blocks,
	// indexed by the domain's position in Cluster.ByTier.
	stats    [topology.NumTiers][]frag.DomainStats
	statsSet [topology.NumTiers]bool
	ordinal  []int32 // DomainID -> position in Cluster.ByTier[its tier]
	// gangMemo caches gangDelta1 per leaf ordinal x whole (NaN: unset);
	// leafGangsOnly says the workload's gang shapes are all leaf-tier.
	gangMemo      []float64
	leafGangsOnly bool
	// scarce rates each GPU model by what constrained jobs are expected
	// to want of its free capacity (scarcity.go), per call.
	scarce *scarcity
	// lending is set during a PlaceLent call; lendHeld is then, by
	// DomainID, the borrowed GPUs each lending domain (lendGroup, by
	// NodeID) holds (lend.go).
	lending   bool
	lendGroup []topology.DomainID
	lendHeld  []int32
}

// New returns an engine for cluster c.
func New(c *topology.Cluster, opts Options) *Engine {
	if opts.Workload == nil {
		w := frag.PhillyPrior(1)
		opts.Workload = &w
	}
	if opts.MaxCandidates <= 0 {
		opts.MaxCandidates = 8
	}
	if opts.LinkCandidates <= 0 {
		opts.LinkCandidates = 4
	}
	e := &Engine{c: c, opts: opts, meter: frag.NewMeter(c, opts.Workload),
		empty: occupancy.New(c), deltaMemo: map[uint64]float64{}, ordinal: make([]int32, len(c.Domains))}
	for i := range c.Nodes {
		e.maxNodeGPUs = max(e.maxNodeGPUs, c.Nodes[i].NumGPUs())
	}
	for _, d := range c.ByTier[topology.TierNVLink] {
		e.maxIsland = max(e.maxIsland, c.Domains[d].NumGPUs())
	}
	e.shapeRows = map[shapeKey][]deltaSlot{}
	e.byModel = make([][]topology.NodeID, len(c.Models))
	for i := range c.Nodes {
		n := topology.NodeID(i)
		e.allNodes = append(e.allNodes, n)
		for m := range c.Models {
			if c.Nodes[i].Models.Has(topology.ModelID(m)) {
				e.byModel[m] = append(e.byModel[m], n)
			}
		}
	}
	for _, d := range c.ByTier[topology.TierBlock] {
		e.hasNVLinkBlocks = e.hasNVLinkBlocks || c.Domains[d].NVLink
	}
	e.maxBlockNodeGPUs = BlockNodeGPUs(c)
	for t := range c.ByTier {
		for i, d := range c.ByTier[t] {
			e.ordinal[d] = int32(i)
		}
	}
	e.gangMemo = make([]float64, 2*len(c.ByTier[topology.TierLeaf]))
	e.leafGangsOnly = !e.meter.HasGangs(topology.TierBlock) && !e.meter.HasGangs(topology.TierSpine)
	e.multiGPU = multiGPUMeter(c, opts.Workload)
	e.scarce = newScarcity(c, opts.Workload)
	return e
}

// multiGPUMeter is an FGD meter over the multi-GPU whole-GPU node shapes of
// w, with their weights as in w and no CPU demand.
func multiGPUMeter(c *topology.Cluster, w *frag.Workload) *frag.Meter {
	var mw frag.Workload
	for _, sh := range w.Node {
		if sh.GPUs >= 2 && sh.Milli >= occupancy.WholeGPU {
			sh.CPUMilli = 0
			mw.Node = append(mw.Node, sh)
		}
	}
	if len(mw.Node) == 0 {
		return nil
	}
	return frag.NewMeter(c, &mw)
}

// Cluster returns the engine's topology.
func (e *Engine) Cluster() *topology.Cluster { return e.c }

// Meter returns the engine's fragmentation meter.
func (e *Engine) Meter() *frag.Meter { return e.meter }

// Place decides where request r goes in snapshot s. It does not change s.
func (e *Engine) Place(s *occupancy.Snapshot, r request.Request) Result {
	if s.Cluster != e.c {
		return Result{Status: Invalid, Message: "snapshot is of another topology than the engine"}
	}
	if r.GPUs == 0 {
		if err := r.Validate(); err != nil {
			return Result{Status: Invalid, Message: err.Error()}
		}
		return e.placeCPU(s, &r)
	}
	p, err := e.resolve(s, &r)
	if err != nil {
		return Result{Status: Invalid, Message: err.Error()}
	}
	e.startCall()
	e.scarce.update(e.c, s)
	res := p.run()
	if res.Status == Placed {
		return res
	}
	// Not now: would it fit an empty cluster at all?
	ep, _ := e.resolve(e.empty, &r)
	ep.ignoreState = true
	e.startCall()
	if never := ep.run(); never.Status != Placed {
		res.Status = Impossible
		res.Message = e.impossibleMessage(&r, ep)
		res.Limit = ep.limit(neverTier(&r))
	}
	return res
}

// run executes the tiers of a resolved plan and returns the first tier's
// best candidate.
func (p *plan) run() Result {
	res := Result{Status: NoFit, Domain: topology.NoDomain}
	p.res = &res
	p.filterNodes()
	var best *Candidate
	var alts []Candidate
	tiers := p.tiers()
	if len(tiers) > 0 {
		p.firstTier = tiers[0]
	}
	for _, t := range tiers {
		best, alts = p.tryTier(t)
		if best != nil {
			if t > p.req.EffectiveTier() && !(t == topology.TierBlock && p.nvlinkBlocksOnly()) {
				res.Widened = true
			}
			break
		}
	}
	res.Rejected = p.rejected.toMap()
	if best == nil {
		res.Message = p.noFitMessage()
		return res
	}
	p.finish(&res, best, alts)
	return res
}

// finish turns the winning candidate into an allocation.
func (p *plan) finish(res *Result, best *Candidate, alts []Candidate) {
	alloc, ok := p.allocate(best)
	if !ok {
		// The counts said yes but no GPU set exists: an engine bug.
		panic(fmt.Sprintf("place: candidate %+v has no GPU set", best))
	}
	res.Status = Placed
	res.Alloc = alloc
	res.Domain, res.Tier = p.e.reached(alloc)
	res.Model = strings.Join(p.e.c.ModelNames(p.won), "+")
	res.Candidates = append([]Candidate{*best}, alts...)
	if len(res.Candidates) > p.e.opts.MaxCandidates {
		res.Candidates = res.Candidates[:p.e.opts.MaxCandidates]
	}
	for _, a := range alts {
		if a.Domain != best.Domain && len(res.Alternatives) < p.e.opts.MaxCandidates {
			res.Alternatives = append(res.Alternatives, a.Domain)
		}
	}
	res.Message = fmt.Sprintf("placed in %s %s on %s", res.Tier, p.e.c.Domains[res.Domain].Name, Describe(p.e.c, alloc))
	if res.Widened {
		res.Message += fmt.Sprintf(" (wider than the preferred %s: none was free)", p.req.EffectiveTier())
	}
}

// reached finds the tightest domain holding every GPU of an allocation.
func (e *Engine) reached(a occupancy.Allocation) (topology.DomainID, topology.Tier) {
	c := e.c
	if len(a.Nodes) == 1 {
		n := &c.Nodes[a.Nodes[0].Node]
		island := c.GPUs[n.GPU(a.Nodes[0].GPUs[0])].Island
		same := true
		for _, g := range a.Nodes[0].GPUs {
			same = same && c.GPUs[n.GPU(g)].Island == island
		}
		if same {
			return island, topology.TierNVLink
		}
		return n.Up[topology.TierNode], topology.TierNode
	}
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
		d := c.Nodes[a.Nodes[0].Node].Up[t]
		if d == topology.NoDomain {
			continue
		}
		all := true
		for _, na := range a.Nodes {
			all = all && c.Nodes[na.Node].Up[t] == d
		}
		if all {
			if t == topology.TierBlock && c.Domains[d].NVLink {
				return d, topology.TierNVLink
			}
			return d, t
		}
	}
	return 0, topology.TierCluster
}

// startCall resets the per-call caches.
func (e *Engine) startCall() {
	e.statsSet = [topology.NumTiers]bool{}
	for i := range e.gangMemo {
		e.gangMemo[i] = math.NaN()
	}
}

// domainStats returns the frag statistics of a leaf or block, computing the
// whole tier once per call.
func (p *plan) domainStats(d topology.DomainID) *frag.DomainStats {
	e := p.e
	t := e.c.Domains[d].Tier
	if !e.statsSet[t] {
		ids := e.c.ByTier[t]
		if cap(e.stats[t]) < len(ids) {
			e.stats[t] = make([]frag.DomainStats, len(ids))
		}
		e.stats[t] = e.stats[t][:len(ids)]
		for i, id := range ids {
			e.stats[t][i] = e.meter.Stats(p.s, id)
		}
		e.statsSet[t] = true
	}
	return &e.stats[t][e.ordinal[d]]
}
