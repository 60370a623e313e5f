package slurmgen

import (
	"fmt"
	"io"
	"strings"

	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// FeaturePrefix starts every feature gangtopo owns, so its features never
// collide with an administrator's: the plugin's default prefix.
const FeaturePrefix = jobsubmit.DefaultFeaturePrefix

// The formats Features can write.
const (
	FormatSlurmConf = "slurm.conf" // NodeName=... Features=... (merge into the node lines)
	FormatScontrol  = "scontrol"   // scontrol update commands for a running cluster
)

// NodeFeatures lists a node's features: its own from the cluster file,
// then the features the job_submit plugin binds jobs with
// (jobsubmit.NodeFeatures: gt_<spine>, gt_<leaf>, gt_<block> for the
// domains above it and gt_<node> for itself), and gt_<model> for each GPU
// model it has. The plugin binds a gang to one domain by rewriting its
// constraint to a matching-OR of these ([gt_leaf1|gt_leaf2]), and a
// one-node job to its ranked nodes ([gt_node07|gt_node03]).
func NodeFeatures(c *topology.Cluster, n *topology.Node) ([]string, error) {
	out := append([]string(nil), n.Features...)
	seen := map[string]bool{}
	for _, f := range out {
		seen[f] = true
	}
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	bound, err := jobsubmit.NodeFeatures(c, FeaturePrefix)
	if err != nil {
		return nil, err
	}
	for _, f := range bound[n.ID] {
		add(f)
	}
	for _, m := range c.ModelNames(n.Models) {
		f := FeaturePrefix + m
		if err := checkName("GPU model", f); err != nil {
			return nil, err
		}
		add(f)
	}
	return out, nil
}

// Features writes every node's features, nodes with equal lists on one
// line: `NodeName=node[01-04] Features=gt_spine1,gt_leaf1,gt_h100` for
// slurm.conf (each node's NodeName line must carry them: Slurm takes one
// definition per node), or `scontrol update NodeName=... AvailableFeatures=...
// ActiveFeatures=...` to apply them to a running cluster.
func Features(w io.Writer, c *topology.Cluster, format string) error {
	if format == "" {
		format = FormatSlurmConf
	}
	if format != FormatSlurmConf && format != FormatScontrol {
		return fmt.Errorf("unknown format %q (want %s or %s)", format, FormatSlurmConf, FormatScontrol)
	}
	var firstErr error
	groups := groupNodes(c, func(n *topology.Node) string {
		fs, err := NodeFeatures(c, n)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("node %s: %w", n.Name, err)
		}
		return strings.Join(fs, ",")
	})
	if firstErr != nil {
		return firstErr
	}
	var b strings.Builder
	if format == FormatSlurmConf {
		b.WriteString(header(c, "Node features"))
	}
	for _, g := range groups {
		if format == FormatScontrol {
			fmt.Fprintf(&b, "scontrol update NodeName=%s AvailableFeatures=%s ActiveFeatures=%s\n", hosts(g.nodes), g.key, g.key)
			continue
		}
		fmt.Fprintf(&b, "NodeName=%s Features=%s\n", hosts(g.nodes), g.key)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
