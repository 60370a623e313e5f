package place

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Scarcity of a GPU model: how much of its capacity the jobs that may use
// only some models need, relative to its share of the cluster.
//
// A job that may run on any GPU model should leave the scarce models to
// the jobs that cannot: a T4 that an unconstrained job takes early is a
// T4 a T4-only job finds taken later, and that job then fails or waits
// while other models sit idle. The fill model sees this only through
// NoAccess, the popularity of the shapes that may not use a model, which
// differs between models by a few percent of a GPU: below its 80-milli
// resolution (fillTie), so it rarely decides. Scarcity is the same
// knowledge made sharp, and used as the tie-break right after the fill
// model's verdict: among placements the fill model rates equal, the one
// on the model constrained jobs need least.
//
//	D_m = sum over typical shapes s restricted to models M_s containing m
//	      of  p_s x GPUs_s x milli_s x supply_m / supply(M_s)
//	r_m = (D_m / D) / (supply_m / supply)
//
// where D is the demand of every typical GPU shape, constrained or not,
// and supply counts GPUs. A constrained shape's demand is spread over its
// models in proportion to their supply. r_m is 0 for a model no
// constrained shape asks for, about 1 for one whose share of constrained
// demand matches its share of the cluster, and above 1 for one that
// constrained jobs alone could exhaust. On workloads without model
// constraints every model scores 0 and nothing changes.
type scarcity []float64 // by ModelID

func newScarcity(c *topology.Cluster, w *frag.Workload) scarcity {
	supply := make([]float64, len(c.Models))
	var total float64
	for g := range c.GPUs {
		supply[c.GPUs[g].Model]++
		total++
	}
	demand := make([]float64, len(c.Models))
	var all float64
	for _, sh := range w.Node {
		d := sh.Weight * float64(sh.GPUs) * float64(sh.Milli)
		all += d
		if sh.Models == 0 || d == 0 {
			continue
		}
		var allowed float64
		for m := range c.Models {
			if sh.Models.Has(topology.ModelID(m)) {
				allowed += supply[m]
			}
		}
		for m := range c.Models {
			if sh.Models.Has(topology.ModelID(m)) && allowed > 0 {
				demand[m] += d * supply[m] / allowed
			}
		}
	}
	r := make(scarcity, len(c.Models))
	for m := range r {
		if supply[m] > 0 && all > 0 {
			r[m] = (demand[m] / all) / (supply[m] / total)
		}
	}
	return r
}

// of is the scarcity of the scarcest model of ms (a node's models under
// a pass); 0 for none.
func (r scarcity) of(ms topology.ModelSet) float64 {
	v := 0.0
	for m, x := range r {
		if ms.Has(topology.ModelID(m)) {
			v = max(v, x)
		}
	}
	return v
}
