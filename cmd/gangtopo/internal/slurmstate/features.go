package slurmstate

import (
	"slices"
	"strings"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The cluster file, topology.conf, gres.conf and the nodes' features in
// slurm.conf are four copies of one topology, and the job_submit plugin
// binds jobs to the features: a node that lacks its domain's feature is
// never chosen for a gang bound to that domain, and one that carries
// another domain's feature draws gangs to the wrong place. So every
// snapshot compares each node's gangtopo features (those with the
// plugin's prefix) with what the cluster file says it should carry.

// boundFeatures is, by NodeID, the features the plugin binds with
// (jobsubmit.NodeFeatures); nil when the prefix is empty (no comparison).
func boundFeatures(c *topology.Cluster, prefix string) ([][]string, error) {
	if prefix == "" {
		return nil, nil
	}
	return jobsubmit.NodeFeatures(c, prefix)
}

// compareFeatures reports a node whose features with the prefix differ
// from the domain features the cluster file gives it. The node's own
// feature (gt_<node>) may be absent: node binding is then off, which the
// plugin notices itself. GPU model features (gt_<model>, which gen
// features also writes) are not topology and are not compared.
func compareFeatures(c *topology.Cluster, prefix string, want, got []string, node string, rep *Report) {
	var missing, stray []string
	own := prefix + node
	for _, f := range want {
		if f != own && !slices.Contains(got, f) {
			missing = append(missing, f)
		}
	}
	for _, f := range got {
		if _, model := c.ModelByName(strings.TrimPrefix(f, prefix)); strings.HasPrefix(f, prefix) && !slices.Contains(want, f) && !model {
			stray = append(stray, f)
		}
	}
	if len(missing) == 0 && len(stray) == 0 {
		return
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ","))
	}
	if len(stray) > 0 {
		parts = append(parts, "not in the cluster file "+strings.Join(stray, ","))
	}
	rep.add(FeaturesDiffer, node, "%s", strings.Join(parts, "; "))
}
