package jobsubmit

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Binding a one-node job to the engine's ranking of nodes.
//
// For a job that fits one node the engine ranks every node it could take
// (Result.Candidates, best first). Written as Slurm's matching OR over
// per-node features, "[gt_node07|gt_node03|gt_node11]", that ranking is
// carried out by Slurm's own scheduler at schedule time: slurmctld tries
// the alternatives in the order written and starts the job on the first
// one with room (node_scheduler.c _pick_best_nodes; backfill takes the
// earliest start, the first on a tie). So the job lands where the engine
// wanted it if that node is still free when it starts, and on the next
// best one if not, which is what a pinned node list (req_nodes) cannot do.
//
// It needs the nodes to carry a feature of their own name (`gangtopo gen
// features` writes gt_<node>); the binding is used only when the snapshot
// shows Slurm's nodes carrying those features. Without them the job keeps
// the older form: the whole free nodes excluded (keepWholeNodes).

// nodeBinding returns the ranked node names a placed one-node job is
// bound to, or nil when node binding is off, the allocation spans nodes,
// or the nodes do not carry their features. For a job array the nodes its
// tasks were placed on come first, in the order the engine filled them
// (tasks.go), then as many ranked alternatives as a job gets.
func (dc *Decider) nodeBinding(pl Placement, s *occupancy.Snapshot) []string {
	if dc.policy.BindNodes <= 0 || len(pl.Alloc.Nodes) != 1 || s.Features == nil {
		return nil
	}
	placed := taskNodes(pl)
	if len(placed) > maxAlternatives {
		return nil // more nodes than Slurm can take alternatives
	}
	k := min(len(placed)+dc.policy.BindNodes-1, maxAlternatives)
	c := dc.cluster
	seen := map[topology.NodeID]bool{}
	var names []string
	add := func(n topology.NodeID) bool {
		if seen[n] || len(names) >= k {
			return true
		}
		seen[n] = true
		has, _ := s.HasFeature(n, DomainFeature(dc.policy.FeaturePrefix, c.Nodes[n].Name))
		if has {
			names = append(names, c.Nodes[n].Name)
		}
		return has
	}
	for _, n := range placed {
		if !add(n) {
			return nil // the engine's choice is not bindable: do not send the job elsewhere
		}
	}
	for _, cands := range [][]place.Candidate{pl.Candidates, pl.Spare} {
		for _, cand := range cands {
			if len(cand.Nodes) == 1 {
				add(cand.Nodes[0].Node)
			}
		}
	}
	return names
}

// taskNodes lists the nodes of a one-node placement's tasks, each once,
// in the order the tasks were placed (just the chosen node for a job).
func taskNodes(pl Placement) []topology.NodeID {
	out := []topology.NodeID{pl.Alloc.Nodes[0].Node}
	seen := map[topology.NodeID]bool{out[0]: true}
	for _, a := range pl.Tasks {
		if n := a.Nodes[0].Node; len(a.Nodes) == 1 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// MaxBindNodes is the largest node binding: every alternative Slurm can
// hold.
const MaxBindNodes = maxAlternatives

// maxAlternatives is the most alternatives a matching-OR group may have:
// slurmctld keeps them in a bitmap of MAX_FEATURES (64) bits in every
// series from 22.05 to 26.05 (node_scheduler.c) and writes past its end
// with more, so gangtopo never writes more.
const maxAlternatives = 64

// unbindable lists the nodes Slurm does not show carrying the features of
// their domains (nil when the snapshot does not report features). The
// engine must not place on them: a gang placed there could not be bound
// to the domain it was placed in, and the decision would say one place
// while Slurm carries out another. The controller reports such nodes.
// The list is kept for the snapshot's feature table (shared by the
// snapshot's clones), which changes with the snapshot's generation only.
func (dc *Decider) unbindable(s *occupancy.Snapshot) []string {
	if s == nil || len(s.Features) == 0 {
		return nil
	}
	dc.unbindMu.Lock()
	defer dc.unbindMu.Unlock()
	if dc.unbindKey == &s.Features[0] {
		return dc.unbindNodes
	}
	var out []string
	c := dc.cluster
	for i := range c.Nodes {
		n := &c.Nodes[i]
		for _, t := range []topology.Tier{topology.TierSpine, topology.TierLeaf, topology.TierBlock} {
			d := n.Up[t]
			if d == topology.NoDomain {
				continue
			}
			if has, _ := s.HasFeature(n.ID, DomainFeature(dc.policy.FeaturePrefix, c.Domains[d].Name)); !has {
				out = append(out, n.Name)
				break
			}
		}
	}
	dc.unbindKey, dc.unbindNodes = &s.Features[0], out
	return out
}
