package place

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Scarcity of a GPU model: how much of its free capacity the jobs that may
// use only some models are expected to want, now.
//
// A job that may run on any GPU model should leave the scarce models to
// the jobs that cannot: a T4 that an unconstrained job takes early is a
// T4 a T4-only job finds taken later, and that job then fails or waits
// while other models sit idle. The fill model cannot see this: it measures
// what stays unused inside a node, and a GPU taken by the wrong job is not
// unused. So the engine adds, for single-node jobs, the capacity it
// expects to deny constrained jobs to the fill model's cost, in the same
// unit (milli-GPUs), before the 80-milli rounding:
//
//	cost = k x share x min(1, rho_m)
//
// for k GPUs of the job's share on model m, where rho_m is the share of
// m's free capacity that constrained jobs are expected to want:
//
//	rho_m = sum over typical shapes s restricted to models M_s containing m
//	        of  D_s x F / F(M_s)
//
// D_s is shape s's share of the typical GPU demand (p_s x GPUs_s x
// milli_s over the same sum for every GPU shape, constrained or not), F
// the free GPU capacity of the usable nodes and F(M_s) that of the models
// s may use. The reading: the jobs to come take the free capacity F in the
// typical proportions, so shape s will want D_s x F, spread over its
// models in proportion to their free capacity; rho_m is what that asks of
// each free milli-GPU of m. A model no constrained shape names has rho 0;
// one its own jobs alone could use up has rho >= 1, and then every
// milli-GPU another job takes is one they will miss.
//
// Why from the snapshot and not from the cluster's total supply: a static
// rate sends every free job to the least wanted model until it is full,
// then to the next. Measured on free capacity, a model the free jobs have
// filled becomes dearer as it fills, and one kept for its own jobs cheaper,
// so the free jobs spread to keep each model's slack in proportion to what
// its own jobs still need. Without model constraints in the workload every
// model scores 0 and the scan is skipped: nothing changes.
//
// The same rho_m, uncapped, is the tie-break right after the rounded
// fragmentation (Score.Scarcity).
type scarcity struct {
	demand []modelDemand
	// free and rho are per call, by ModelID.
	free, rho []float64
}

// modelDemand is one constrained typical shape: the models it accepts and
// its share of the typical GPU demand.
type modelDemand struct {
	models topology.ModelSet
	share  float64
}

func newScarcity(c *topology.Cluster, w *frag.Workload) *scarcity {
	sc := &scarcity{free: make([]float64, len(c.Models)), rho: make([]float64, len(c.Models))}
	var all float64
	for _, sh := range w.Node {
		d := sh.Weight * float64(sh.GPUs) * float64(sh.Milli)
		all += d
		if sh.Models != 0 && d > 0 {
			sc.demand = append(sc.demand, modelDemand{sh.Models, d})
		}
	}
	for i := range sc.demand {
		sc.demand[i].share /= all
	}
	return sc
}

// update computes rho for snapshot s: one pass over the GPUs of the usable
// nodes, only when some typical shape is constrained.
func (sc *scarcity) update(c *topology.Cluster, s *occupancy.Snapshot) {
	clear(sc.rho)
	if len(sc.demand) == 0 {
		return
	}
	clear(sc.free)
	var total float64
	for n := range c.Nodes {
		if !s.State[n].Usable() {
			continue
		}
		node := &c.Nodes[n]
		for i, f := range s.NodeFree(topology.NodeID(n)) {
			sc.free[c.GPUs[node.GPU(i)].Model] += float64(f)
			total += float64(f)
		}
	}
	for _, d := range sc.demand {
		var fm float64
		for m, f := range sc.free {
			if d.models.Has(topology.ModelID(m)) {
				fm += f
			}
		}
		if fm == 0 {
			continue // nothing left of its models to keep for it
		}
		for m := range sc.rho {
			if d.models.Has(topology.ModelID(m)) {
				sc.rho[m] += d.share * total / fm
			}
		}
	}
}

// of is the scarcity of the scarcest model of ms (a node's models under a
// pass); 0 for none.
func (sc *scarcity) of(ms topology.ModelSet) float64 {
	v := 0.0
	for m, x := range sc.rho {
		if ms.Has(topology.ModelID(m)) {
			v = max(v, x)
		}
	}
	return v
}

// cost is the capacity, in milli-GPUs, that k GPUs of share milli on a
// model of scarcity rho are expected to deny constrained jobs.
func scarcityCost(rho float64, k int, share uint16) float64 {
	return min(1, rho) * float64(k) * float64(share)
}
