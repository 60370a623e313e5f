package queue

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/sim/stepcost"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Two slowdown models charge a placement: the grounded one
// (selector/sim/stepcost: each job's collectives, published demands, the
// bandwidth its placement gets from the cluster file), when
// Config.Grounded is set, and otherwise Slowdown's fixed factors per tier
// (NoSlowdown: none). A replay asks its slower for every job it starts.

// Grounded selects the grounded slowdown model at a band.
type Grounded struct {
	Band stepcost.Band
}

// slower is the slowdown model a replay charges placements with.
type slower interface {
	factor(j *Job, a occupancy.Allocation) (f float64, tier topology.Tier, nodes int)
}

// newSlower is the model cfg selects for cluster c (a grounded model
// keeps per-replay caches: one per replay).
func newSlower(c *topology.Cluster, cfg *Config) slower {
	if cfg.Grounded != nil {
		return &groundedSlower{c: c, m: stepcost.New(c, cfg.Grounded.Band)}
	}
	return &factorSlower{c: c, s: cfg.Slowdown, most: mostGPUs(c)}
}

// factorSlower charges Slowdown's fixed factors.
type factorSlower struct {
	c    *topology.Cluster
	s    Slowdown
	most int
}

func (f *factorSlower) factor(j *Job, a occupancy.Allocation) (float64, topology.Tier, int) {
	tier, nodes := Reach(f.c, a)
	return f.s.Factor(tier, nodes, minNodes(f.most, j.GPUs)), tier, nodes
}

// groundedSlower charges the grounded model.
type groundedSlower struct {
	c *topology.Cluster
	m *stepcost.Model
}

func (g *groundedSlower) factor(j *Job, a occupancy.Allocation) (float64, topology.Tier, int) {
	tier, nodes := Reach(g.c, a)
	if len(a.Nodes) == 0 {
		return 1, tier, nodes
	}
	return g.m.Factor(j.Name, a), tier, nodes
}

// Slowdown is the placement slowdown model: how much longer a job runs
// because of where its GPUs are. A job of base duration d placed with
// slowdown f runs for d*f and holds its GPUs that long.
//
//	f = Tier[reached] * (1 + Spread * (nodes - minNodes) / minNodes)
//
// reached is the tightest domain tier that holds every GPU of the job
// (nvlink for one NVLink island or one NVLink block, node for one server
// whose GPUs are not all on one island, then block, leaf, spine and any
// for a job that crosses spines); nodes is how many servers it uses and
// minNodes the fewest servers of this cluster that could hold it.
//
// Why locality: Jeon et al. ("Analysis of Large-Scale Multi-Tenant GPU
// Clusters for DNN Training Workloads", USENIX ATC'19, the Philly paper)
// found that GPU utilisation of distributed jobs falls as the same number
// of GPUs is spread over more servers, and that Philly's scheduler made
// jobs wait for locality for that reason. Gu et al. ("Tiresias: A GPU
// Cluster Manager for Distributed Deep Learning", NSDI'19) measured that
// consolidation matters strongly for models with large tensors (VGG-like,
// communication heavy) and little for others. The defaults
// (DefaultSlowdown) are a middle ground in the spirit of those findings:
// nothing lost inside one NVLink domain, a little across the PCIe islands
// of one server, more across servers of one leaf switch, more again
// across leaves and spines, and a per-extra-server term because the same
// gang on more servers shares fewer NVLinks and more network links. They
// are assumptions, not measurements of any one model: every factor can be
// changed (ParseSlowdown), and the replay reports the GPU-hours the model
// charged so its weight in the results is visible.
type Slowdown struct {
	// Tier[t] is the factor of a job whose tightest domain is of tier t
	// (index by topology.Tier; index 0 is unused).
	Tier [topology.NumTiers]float64
	// Spread is the extra fraction of run time per server beyond the
	// fewest that could hold the job, relative to that fewest.
	Spread float64
}

// DefaultSlowdown is the model used unless told otherwise: nvlink 1.0,
// node 1.1, block 1.2, leaf 1.2, spine 1.4, any 1.5, spread 0.05.
func DefaultSlowdown() Slowdown {
	var s Slowdown
	s.Tier[topology.TierNVLink] = 1.0
	s.Tier[topology.TierNode] = 1.1
	s.Tier[topology.TierBlock] = 1.2
	s.Tier[topology.TierLeaf] = 1.2
	s.Tier[topology.TierSpine] = 1.4
	s.Tier[topology.TierCluster] = 1.5
	s.Spread = 0.05
	return s
}

// NoSlowdown charges nothing for locality: every factor 1, spread 0.
func NoSlowdown() Slowdown {
	var s Slowdown
	for _, t := range topology.Tiers() {
		s.Tier[t] = 1
	}
	return s
}

// Factor is the slowdown of a job that reached tier t on nodes servers
// when minNodes would have sufficed.
func (s *Slowdown) Factor(t topology.Tier, nodes, minNodes int) float64 {
	f := s.Tier[t]
	if minNodes > 0 && nodes > minNodes {
		f *= 1 + s.Spread*float64(nodes-minNodes)/float64(minNodes)
	}
	return f
}

// Validate checks that every factor is a finite number of at least 1 and
// the spread is finite and not negative.
func (s *Slowdown) Validate() error {
	for _, t := range topology.Tiers() {
		if f := s.Tier[t]; !(f >= 1) || math.IsInf(f, 0) {
			return fmt.Errorf("slowdown %s=%g: want a finite factor >= 1", t, f)
		}
	}
	if !(s.Spread >= 0) || math.IsInf(s.Spread, 0) {
		return fmt.Errorf("slowdown spread=%g: want a finite number >= 0", s.Spread)
	}
	return nil
}

// String renders the model in the form ParseSlowdown reads.
func (s Slowdown) String() string {
	var parts []string
	for _, t := range topology.Tiers() {
		parts = append(parts, t.String()+"="+strconv.FormatFloat(s.Tier[t], 'g', -1, 64))
	}
	parts = append(parts, "spread="+strconv.FormatFloat(s.Spread, 'g', -1, 64))
	return strings.Join(parts, ",")
}

// ParseSlowdown reads "none", "default", or comma-separated KEY=VALUE
// pairs over the default model, KEY being a tier name (nvlink, node,
// block, leaf, spine, any) or spread: "leaf=1.3,any=2,spread=0.1".
func ParseSlowdown(text string) (Slowdown, error) {
	text = strings.TrimSpace(text)
	switch text {
	case "", "default":
		return DefaultSlowdown(), nil
	case "none":
		return NoSlowdown(), nil
	}
	s := DefaultSlowdown()
	for _, part := range strings.Split(text, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return s, fmt.Errorf("slowdown %q: want KEY=VALUE (keys: %s, spread), or none, or default", part, topology.TierNames())
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return s, fmt.Errorf("slowdown %s=%q: not a number", key, val)
		}
		if strings.TrimSpace(key) == "spread" {
			s.Spread = v
			continue
		}
		t, err := topology.ParseTier(key)
		if err != nil {
			return s, fmt.Errorf("slowdown key %q: %v, or spread", key, err)
		}
		s.Tier[t] = v
	}
	return s, s.Validate()
}

// Reach finds the tightest domain tier holding every GPU of an allocation
// and the number of servers it uses. One island (or one NVLink block) is
// TierNVLink; one server otherwise TierNode.
func Reach(c *topology.Cluster, a occupancy.Allocation) (topology.Tier, int) {
	nodes := len(a.Nodes)
	if nodes == 0 {
		return topology.TierNVLink, 0
	}
	first := &c.Nodes[a.Nodes[0].Node]
	if nodes == 1 {
		gpus := a.Nodes[0].GPUs
		if len(gpus) == 0 {
			return topology.TierNVLink, 1
		}
		island := c.GPUs[first.GPU(gpus[0])].Island
		for _, g := range gpus[1:] {
			if c.GPUs[first.GPU(g)].Island != island {
				return topology.TierNode, 1
			}
		}
		return topology.TierNVLink, 1
	}
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		d := first.Up[t]
		if d == topology.NoDomain {
			continue
		}
		same := true
		for _, na := range a.Nodes[1:] {
			same = same && c.Nodes[na.Node].Up[t] == d
		}
		if !same {
			continue
		}
		if t == topology.TierBlock && c.Domains[d].NVLink {
			return topology.TierNVLink, nodes
		}
		return t, nodes
	}
	return topology.TierCluster, nodes
}
