package place

import (
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Lending is what one placement knows of lent capacity: given (PlaceLent)
// for a request that borrows, that is runs preemptible on GPUs another
// account lends and takes back by requeueing it (docs/quota.md).
//
// Why it changes the placement: an owner takes its share back by freeing
// a domain of its job's tier (selector/quota.Reclaim), and only borrowed
// jobs may be taken. Borrowed jobs spread over many leaves leave each leaf
// part owner-held, so the owner's gang needs victims in several places, or
// a wider tier; packed into few lending domains, a reclaim frees one of
// them whole, and the other domains never hold work that can be taken.
type Lending struct {
	// Borrowed is, by NodeID, the GPUs that borrowing jobs hold now
	// (shorter than the cluster's nodes: none on the rest).
	Borrowed []int
}

// lendGroups is the domain a node's lent GPUs count in: its NVLink block
// or block where the cluster has one, else its leaf, else its spine (the
// cluster itself when it has none of these).
func lendGroups(c *topology.Cluster) []topology.DomainID {
	out := make([]topology.DomainID, len(c.Nodes))
	for i := range c.Nodes {
		out[i] = topology.NoDomain
		for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine, topology.TierCluster} {
			if d := c.Nodes[i].Up[t]; d != topology.NoDomain {
				out[i] = d
				break
			}
		}
	}
	return out
}

// PlaceLent is Place for a request that borrows: among the candidates of
// the tightest tier with room, and after their node and leaf counts (a
// borrowed job keeps its own tightness), those that open fewer lending
// domains win (domains, per lendGroups, where no borrowed GPU is held now),
// then those whose domains hold more borrowed GPUs already; the
// fragmentation order of Score decides the rest. l with no borrowed GPU
// anywhere changes nothing but that order's tie-breaks: every candidate
// opens the same number of domains.
func (e *Engine) PlaceLent(s *occupancy.Snapshot, r request.Request, l Lending) Result {
	if r.GPUs == 0 {
		return e.Place(s, r)
	}
	if e.lendGroup == nil {
		e.lendGroup = lendGroups(e.c)
		e.lendHeld = make([]int32, len(e.c.Domains))
	}
	clear(e.lendHeld)
	for n, g := range l.Borrowed {
		if n < len(e.lendGroup) && g > 0 && e.lendGroup[n] != topology.NoDomain {
			e.lendHeld[e.lendGroup[n]] += int32(g)
		}
	}
	e.lending = true
	defer func() { e.lending = false }()
	return e.Place(s, r)
}

// scoreLend sets the lending keys of a borrowing request's candidate on
// nodes (Score.LendOpen, Score.LendHeld); nothing for other requests.
func (p *plan) scoreLend(sc *Score, shares []NodeShare) {
	e := p.e
	if !e.lending || p.ignoreState {
		return
	}
	var seen [4]topology.DomainID
	groups := seen[:0]
	for _, sh := range shares {
		g := e.lendGroup[sh.Node]
		if g == topology.NoDomain || containsDomain(groups, g) {
			continue
		}
		groups = append(groups, g)
		if h := e.lendHeld[g]; h > 0 {
			sc.LendHeld += int(h)
		} else {
			sc.LendOpen++
		}
	}
}

func containsDomain(ds []topology.DomainID, d topology.DomainID) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}
