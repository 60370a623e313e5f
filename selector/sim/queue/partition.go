package queue

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/quota"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Static partitions: the baseline enterprises run. Each team owns its
// nodes, a Slurm partition of its own sized by its share, and its jobs
// run only there; no team borrows what another leaves idle. Slurm
// schedules disjoint partitions independently (a job of one partition
// neither blocks nor reserves nodes of another), so the replay runs one
// queue per partition, each on its team's part of the cluster
// (topology.Spec.Subset) with its team's jobs, and merges the outcomes
// into one result over the whole cluster: utilisation, waits and stranded
// GPU-hours (GPUs idle in one partition while jobs wait in another) are
// the whole cluster's.

// Partition is one team's part of a statically partitioned cluster.
type Partition struct {
	Account string
	Cluster *topology.Cluster
}

// ReplayPartitioned replays the jobs of each partition's account on its
// own cluster with the policy policy(partition) makes, and merges the
// results into one over cluster c named name. A job of an account
// without a partition, or too large for its partition, is rejected.
// cfg.Quota, when set, gives the shares the outcomes are measured against
// (no limit is kept: the partition is the limit).
func ReplayPartitioned(c *topology.Cluster, name string, jobs []Job, parts []Partition,
	policy func(*topology.Cluster) Policy, cfg Config) (*Result, error) {
	if err := checkJobs(jobs); err != nil {
		return nil, err
	}
	res := newResult(name, c, jobs)
	for i := range res.Outcomes {
		res.Outcomes[i].Rejected = true
	}
	if cfg.Quota != nil {
		res.Shares = cfg.Quota.Shares
	}
	done := 0
	for _, p := range parts {
		idx, sub := partitionJobs(jobs, p.Account)
		if len(sub) == 0 {
			continue
		}
		pc := cfg
		pc.Quota = partitionQuota(cfg.Quota, p.Account)
		if cfg.Progress != nil {
			base := done
			pc.Progress = func(d, _ int) { cfg.Progress(base+d, len(jobs)) }
		}
		r, err := Replay(p.Cluster, sub, policy(p.Cluster), pc)
		if err != nil {
			return nil, fmt.Errorf("partition of %s: %w", p.Account, err)
		}
		mergePartition(res, r, idx, partitionNodes(c, p.Cluster))
		done += len(sub)
	}
	return res, nil
}

// partitionJobs are the jobs of account, and their indices in jobs.
func partitionJobs(jobs []Job, account string) ([]int, []Job) {
	var idx []int
	var sub []Job
	for i := range jobs {
		if strings.EqualFold(jobs[i].Account, account) {
			idx = append(idx, i)
			sub = append(sub, jobs[i])
		}
	}
	return idx, sub
}

// partitionQuota measures a partition's jobs against its account's share
// alone, keeping no limit.
func partitionQuota(q *Quota, account string) *Quota {
	if q == nil {
		return nil
	}
	share, _ := q.Shares.Find(account)
	return &Quota{Mode: QuotaOff, Shares: quota.Shares{share}, Interval: q.Interval, RequeueDelay: q.RequeueDelay}
}

// partitionNodes maps a partition's nodes to the whole cluster's, by name
// (the partition is a subset of the cluster file).
func partitionNodes(c, part *topology.Cluster) []topology.NodeID {
	ids := make([]topology.NodeID, len(part.Nodes))
	for i := range part.Nodes {
		id, ok := c.NodeByName(part.Nodes[i].Name)
		if !ok {
			panic("replay: partition node " + part.Nodes[i].Name + " is not in the cluster")
		}
		ids[i] = id
	}
	return ids
}

// mergePartition copies a partition's outcomes into res (idx maps its
// jobs to res's, nodes its nodes to res's cluster's) and adds up its
// counts.
func mergePartition(res, r *Result, idx []int, nodes []topology.NodeID) {
	remap := func(used []NodeGPUs) []NodeGPUs {
		out := make([]NodeGPUs, len(used))
		for i, u := range used {
			out[i] = NodeGPUs{Node: nodes[u.Node], GPUs: u.GPUs}
		}
		return out
	}
	for k, o := range r.Outcomes {
		if o.Used != nil {
			o.Used = remap(o.Used)
		}
		res.Outcomes[idx[k]] = o
	}
	for _, q := range r.Requeues {
		q.Job = int32(idx[q.Job])
		q.Used = remap(q.Used)
		res.Requeues = append(res.Requeues, q)
	}
	res.HeldIdleGPUSeconds += r.HeldIdleGPUSeconds
	res.Deadlocks += r.Deadlocks
	res.Timeouts += r.Timeouts
	res.Passes += r.Passes
	res.PlaceCalls += r.PlaceCalls
	res.OwnerBound = r.OwnerBound
}
