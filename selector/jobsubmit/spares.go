package jobsubmit

import (
	"fmt"
	"slices"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Spare nodes per domain (gangtopo.yaml spares:).
//
// A site keeps a few nodes of each leaf (or block, or spine) for repairs:
// when a node under a running gang fails, the requeued gang restarts
// inside its own domain on a spare, instead of waiting for a whole domain
// to free or going wider. Which nodes are spares is fixed by the cluster
// file, so the plugin, the controller and the replay all read the same
// ones: the last PerDomain GPU nodes of each domain of Tier, in the
// file's order; a domain keeps at least one node that is not a spare.
//
// Ordinary decisions exclude the spares: from the engine's request, and
// from the job's ExcNodeList, recorded as gangtopo's exclusions in the
// decision (excluded=), so that Original, `gangtopo unbind` and the
// plugin's job_modify treat them as they treat every exclusion gangtopo
// added. Two kinds of jobs may use spares:
//
//   - a gang re-bound after one of its nodes failed (Restart) may use the
//     spares of the domains it ran in; its decision records them
//     (spares=leaf3), so later re-bindings keep them;
//   - lent work: a job of at most LendMaxGPUs GPUs whose every partition
//     is in LendPartitions (partitions the site preempts, for example
//     PreemptType=preempt/partition_prio and a lower PriorityTier than the
//     gangs' partition). A lent spare is taken back for a restarting gang
//     by Slurm's own preemption (reclaimLent): when the gang fits its old
//     domain only with the lent work on that domain's spares gone,
//     Restart binds it there anyway, and Slurm preempts the lent jobs
//     when it starts the gang. gangtopo itself requeues nothing: where
//     Slurm does not preempt those partitions, the gang waits for the lent
//     work to end, unless another domain frees first (the ordinary
//     re-binding then moves it there).
//
// Spares hold only against the jobs gangtopo decides: under jobs: gang a
// plain job is left to Slurm and may take one, so the configuration asks
// for jobs: gpu or all.

// Spares is the spares: policy; PerDomain 0 keeps none.
type Spares struct {
	Tier      topology.Tier
	PerDomain int
	// LendPartitions and LendMaxGPUs say which jobs may run on spares
	// meanwhile (none when LendPartitions is empty).
	LendPartitions []string
	LendMaxGPUs    int
}

// On says whether spares are kept.
func (s Spares) On() bool { return s.PerDomain > 0 }

// SpareNodes lists the spares the policy keeps on cluster c, in node
// order: in each domain of the policy's tier, its last PerDomain nodes
// with GPUs, leaving at least one.
func SpareNodes(c *topology.Cluster, s Spares) []topology.NodeID {
	if !s.On() {
		return nil
	}
	var out []topology.NodeID
	for _, d := range c.ByTier[s.Tier] {
		var gpu []topology.NodeID
		for _, n := range domainNodes(c, d) {
			if c.Nodes[n].NumGPUs() > 0 {
				gpu = append(gpu, n)
			}
		}
		k := min(s.PerDomain, len(gpu)-1)
		if k > 0 {
			out = append(out, gpu[len(gpu)-k:]...)
		}
	}
	slices.Sort(out)
	return out
}

// CheckSpares says why a spares policy cannot be kept on cluster c, or
// nil: its tier must be one the cluster has, above a node.
func CheckSpares(c *topology.Cluster, s Spares) error {
	if !s.On() {
		return nil
	}
	if s.Tier <= topology.TierNode || s.Tier == topology.TierCluster || !c.HasTier(s.Tier) {
		return fmt.Errorf("spares: tier %s: want a tier of cluster %s between a node and the whole cluster (its tiers: %s)", s.Tier, c.Name, tierList(c))
	}
	if len(SpareNodes(c, s)) == 0 {
		return fmt.Errorf("spares: no %s of cluster %s has two nodes with GPUs: none can keep a spare", s.Tier, c.Name)
	}
	return nil
}

// lends says whether job j, of gpus GPUs, may run on spares.
func (dc *Decider) lends(j Job, gpus int) bool { return dc.lendable(jobPartition(j), gpus) }

// lentJob says whether running job j is lent work.
func (dc *Decider) lentJob(j occupancy.Job) bool { return dc.lendable(j.Partition, j.Alloc.NumGPUs()) }

// lendable says whether a job of gpus GPUs in the partitions part (a
// comma-separated list) may run on spares: every one lends (Slurm may
// start it in any), and it holds at most LendMaxGPUs GPUs.
func (dc *Decider) lendable(part string, gpus int) bool {
	sp := dc.policy.Spares
	parts := request.SplitList(part)
	if len(sp.LendPartitions) == 0 || gpus > sp.LendMaxGPUs || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if !slices.Contains(sp.LendPartitions, p) {
			return false
		}
	}
	return true
}

// reclaimLent is snapshot s without the lent work (lentJob) running only
// on spares of domain d that prepared job p may use (allowSpares), and
// the IDs of the jobs taken off; s itself, and none, when there are none.
// Slurm takes those spares back by preempting the jobs: what a gang
// restarting in d may count on where the lent partitions are preemptable.
func (dc *Decider) reclaimLent(s *occupancy.Snapshot, p Prepared, d topology.DomainID) (*occupancy.Snapshot, []string) {
	c, tier := dc.cluster, dc.policy.Spares.Tier
	mine := func(n topology.NodeID) bool {
		sd := c.Nodes[n].Up[tier]
		return slices.Contains(dc.spares, n) && sd != topology.NoDomain && slices.Contains(p.SpareDomains, c.Domains[sd].Name) &&
			(c.Nodes[n].Up[c.Domains[d].Tier] == d)
	}
	var ids []string
	for _, j := range s.Jobs {
		if !dc.lentJob(j) || len(j.Alloc.Nodes) == 0 {
			continue
		}
		onSpares := true
		for _, na := range j.Alloc.Nodes {
			onSpares = onSpares && mine(na.Node)
		}
		if onSpares {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return s, nil
	}
	out := s.Clone()
	for _, id := range ids {
		if err := out.RemoveJob(id); err != nil {
			return s, nil // the snapshot is not what it says: take nothing back
		}
	}
	return out, ids
}

// excludeSpares lists the spares to add to a request's exclusions: those
// the user did not exclude already, nor name (--nodelist: a job that names
// a spare gets it).
func (dc *Decider) excludeSpares(r request.Request) []string {
	var added []string
	for _, n := range dc.spares {
		name := dc.cluster.Nodes[n].Name
		if !slices.Contains(r.Excluded, name) && !slices.Contains(r.Allowed, name) {
			added = append(added, name)
		}
	}
	return added
}

// allowSpares lets prepared job p use the spares of the named domains
// (of the spares' tier): they leave its exclusions, and the decision
// records the domains.
func (dc *Decider) allowSpares(p *Prepared, domains []string) {
	if len(dc.spares) == 0 {
		return
	}
	c, tier := dc.cluster, dc.policy.Spares.Tier
	allowed := map[topology.DomainID]bool{}
	for _, name := range domains {
		if d, ok := c.DomainByName(name); ok && c.Domains[d].Tier == tier && !slices.Contains(p.SpareDomains, name) {
			p.SpareDomains = append(p.SpareDomains, name)
			allowed[d] = true
		}
	}
	var freed []string
	p.Spared = slices.DeleteFunc(slices.Clone(p.Spared), func(x string) bool {
		n, ok := c.NodeByName(x)
		if ok && allowed[c.Nodes[n].Up[tier]] {
			freed = append(freed, x)
			return true
		}
		return false
	})
	if len(freed) > 0 {
		p.Request.Excluded = slices.DeleteFunc(slices.Clone(p.Request.Excluded), func(x string) bool { return slices.Contains(freed, x) })
	}
}

// spareDomainsOf names the domains of the spares' tier that hold the
// named nodes (unknown names skipped).
func (dc *Decider) spareDomainsOf(names []string) []string {
	var out []string
	for _, name := range names {
		n, ok := dc.cluster.NodeByName(name)
		if !ok {
			continue
		}
		if d := dc.cluster.Nodes[n].Up[dc.policy.Spares.Tier]; d != topology.NoDomain {
			if dn := dc.cluster.Domains[d].Name; !slices.Contains(out, dn) {
				out = append(out, dn)
			}
		}
	}
	return out
}

// sparesNote adds to a refusal that the sizes it gives leave the spares
// out.
func (dc *Decider) sparesNote(p Prepared) string {
	if len(p.Spared) == 0 {
		return ""
	}
	sp := dc.policy.Spares
	return fmt.Sprintf(" (the sizes count no spares: gangtopo.yaml keeps %d node(s) of each %s for gangs restarting after a node failure)", sp.PerDomain, sp.Tier)
}
