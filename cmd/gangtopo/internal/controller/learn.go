package controller

import (
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The controller learns the cluster's request mix from the jobs it sees
// running (frag.Learner: the last MixWindow distinct jobs) and publishes
// it with every snapshot, so the plugin measures fragmentation against
// this cluster's jobs rather than a fixed mix. A job's shape is read from
// what it holds (GPUs, share and CPUs on each node; for a gang, its node
// count) and from gangtopo's decision line in its AdminComment (the tier
// of its --gang-topology, and the GPU models it accepts: where a job runs
// does not say which models it would have accepted). A job without a
// decision (out of scope, or submitted before the plugin) counts as
// accepting any model. The model constraints are what lets the engine
// leave scarce models to the jobs that need them (selector/place,
// scarcity.go). The mix is recomputed every mixEvery cycles (a minute at
// the default interval) and the previous one published in between.

// MixWindow is how many distinct jobs the learned mix comes from.
const MixWindow = 10000

// mixEvery is how many cycles pass between recomputations of the mix.
const mixEvery = 12

// mixLearner is the controller's learner and its last result.
type mixLearner struct {
	l      *frag.Learner
	prior  frag.Workload
	cycles int
	mix    *occupancy.Mix // last learned; nil until enough jobs were seen
}

func newMixLearner(prior frag.Workload) *mixLearner {
	return &mixLearner{l: frag.NewLearner(MixWindow), prior: prior}
}

// observe shows the learner the running jobs of a snapshot and, every
// mixEvery cycles, relearns; it returns the mix to publish (nil: none
// yet) and whether it changed.
func (m *mixLearner) observe(c *topology.Cluster, s *occupancy.Snapshot) (*occupancy.Mix, bool, error) {
	for i := range s.Jobs {
		if o, ok := observation(c, &s.Jobs[i]); ok {
			m.l.Observe(s.Jobs[i].ID, o)
		}
	}
	m.cycles++
	if m.cycles%mixEvery != 1 {
		return m.mix, false, nil
	}
	w, ok, err := m.l.Workload(frag.TypicalCoverage, m.prior)
	if err != nil || !ok {
		return m.mix, false, err
	}
	m.mix = frag.WorkloadMix(c, w, m.l.Len())
	return m.mix, true, nil
}

// observation is what a running job tells the learner; false for a job
// that holds nothing. A model the cluster does not have (a decision from
// an older cluster file) is left out.
func observation(c *topology.Cluster, j *occupancy.Job) (frag.Observation, bool) {
	if len(j.Alloc.Nodes) == 0 {
		return frag.Observation{}, false
	}
	na := j.Alloc.Nodes[0]
	o := frag.Observation{Nodes: len(j.Alloc.Nodes),
		Node: frag.NodeShape{GPUs: len(na.GPUs), CPUMilli: int64(na.CPUMilli)}}
	if len(na.GPUs) > 0 {
		o.Node.Milli = int(na.Milli)
		for _, m := range j.Models {
			if id, ok := c.ModelByName(m); ok {
				o.Node.Models = o.Node.Models.With(id)
			}
		}
	}
	if opt, err := request.ParseOption(j.Request); err == nil && j.Request != "" {
		o.Tier = opt.Tier
	}
	return o, true
}
