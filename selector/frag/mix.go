package frag

import (
	"fmt"
	"sort"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// MixWorkload turns a learned mix from a snapshot into the engine's
// workload on cluster c. A model or tier the cluster does not have, a
// negative weight or an empty mix is an error (the snapshot is then used
// without its mix).
func MixWorkload(c *topology.Cluster, m *occupancy.Mix) (Workload, error) {
	if m == nil {
		return Workload{}, fmt.Errorf("no mix")
	}
	var w Workload
	for i, s := range m.Node {
		ms, err := modelSet(c, s.Models)
		if err != nil {
			return Workload{}, fmt.Errorf("mix node shape %d: %w", i, err)
		}
		if s.GPUs < 0 || s.Milli < 0 || s.Milli > occupancy.WholeGPU || s.CPUMilli < 0 {
			return Workload{}, fmt.Errorf("mix node shape %d: %d GPUs of %d milli, %d milli-CPUs is not a shape", i, s.GPUs, s.Milli, s.CPUMilli)
		}
		w.Node = append(w.Node, NodeShape{GPUs: s.GPUs, Milli: s.Milli, CPUMilli: s.CPUMilli, Models: ms, Weight: s.Weight})
	}
	for i, g := range m.Gangs {
		ms, err := modelSet(c, g.Models)
		if err != nil {
			return Workload{}, fmt.Errorf("mix gang %d: %w", i, err)
		}
		t, err := topology.ParseTier(g.Tier)
		if err != nil {
			return Workload{}, fmt.Errorf("mix gang %d: %w", i, err)
		}
		w.Gangs = append(w.Gangs, GangShape{Nodes: g.Nodes, Tier: t, Models: ms, Weight: g.Weight})
	}
	if err := w.Normalize(); err != nil {
		return Workload{}, fmt.Errorf("mix: %w", err)
	}
	return w, nil
}

// WorkloadMix is the snapshot form of a learned workload.
func WorkloadMix(c *topology.Cluster, w Workload, jobs int) *occupancy.Mix {
	m := &occupancy.Mix{Jobs: jobs}
	for _, s := range w.Node {
		m.Node = append(m.Node, occupancy.MixShape{GPUs: s.GPUs, Milli: s.Milli, CPUMilli: s.CPUMilli,
			Models: c.ModelNames(s.Models), Weight: s.Weight})
	}
	for _, g := range w.Gangs {
		m.Gangs = append(m.Gangs, occupancy.MixGang{Nodes: g.Nodes, Tier: g.Tier.String(), Models: c.ModelNames(g.Models), Weight: g.Weight})
	}
	return m
}

func modelSet(c *topology.Cluster, names []string) (topology.ModelSet, error) {
	var ms topology.ModelSet
	for _, n := range names {
		id, ok := c.ModelByName(n)
		if !ok {
			known := append([]string(nil), c.Models...)
			sort.Strings(known)
			return 0, fmt.Errorf("GPU model %q is not in cluster %s (it has %v)", n, c.Name, known)
		}
		ms = ms.With(id)
	}
	return ms, nil
}
