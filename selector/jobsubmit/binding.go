package jobsubmit

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/topology"
)

// gangtopo's part of a job, and the job without it.
//
// The rewrite adds to a job what Slurm needs to carry the decision out:
// features (the matching OR over the bound domains or nodes, ANDed to the
// user's own constraint as "(user)&[gt_a|gt_b]"), exclusions (whole free
// nodes added to the user's ExcNodeList), a shape (-N n --gpus-per-node=k
// for --gpus=G) and the decision line. The decision records each part
// (bound=, excluded=, shape=), so they can be told apart from the user's:
// the controller takes them out to decide about the job again as it was
// submitted (Original, rebind.go), `gangtopo unbind` takes the binding out
// for good, and the plugin's job_modify puts it back when a user's update
// would drop it (modify.go).

// BindingExpr is the features expression the rewrite writes for the bound
// domains or nodes: "gt_leaf3", or "[gt_leaf3|gt_leaf1]".
func BindingExpr(prefix string, bound []string) string {
	fs := make([]string, len(bound))
	for i, n := range bound {
		fs[i] = DomainFeature(prefix, n)
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return "[" + strings.Join(fs, "|") + "]"
}

// UserFeatures takes gangtopo's expression ours out of a job's features,
// as andFeatures wrote them: "(user)&ours" gives "user", "ours" gives "".
// ok is false when the features do not end with ours that way (someone
// changed them since).
func UserFeatures(features, ours string) (string, bool) {
	switch {
	case ours == "":
		return features, true
	case features == ours:
		return "", true
	case strings.HasPrefix(features, "(") && strings.HasSuffix(features, ")&"+ours):
		return features[1 : len(features)-len(ours)-2], true
	}
	return features, false
}

// WithBinding is the user's features with gangtopo's expression ours
// added, as the rewrite adds it; features that already end with it are
// returned as they are.
func WithBinding(user, ours string) string {
	if _, ok := UserFeatures(user, ours); ok && ours != "" && strings.HasSuffix(user, ours) {
		return user
	}
	return andFeatures(user, ours)
}

// Binds says whether the decision bound the job to anything Slurm holds it
// to: domains or nodes through features, or added exclusions.
func (d Decision) Binds() bool {
	return (d.Verdict == VerdictPlaced || d.Verdict == VerdictWaiting || d.Verdict == VerdictWider) &&
		(len(d.Bound) > 0 || d.Excluded != "")
}

// Original is the job as its user submitted it, from the job as Slurm
// holds it now (now) and gangtopo's decision about it: gangtopo's features
// expression, added exclusions and shape taken out, the decision line
// dropped from the AdminComment, the request the decision read back as the
// option. It fails when the features no longer end with gangtopo's
// expression (changed since, by someone gangtopo cannot tell apart).
//
// What cannot be told apart stays as Slurm holds it: -N 1 on a job bound
// to one node (the user may have asked for it too), and exclusions the
// user also named.
func Original(now Job, d Decision, prefix string) (Job, error) {
	j := now
	if len(d.Bound) > 0 {
		user, ok := UserFeatures(now.Features, BindingExpr(prefix, d.Bound))
		if !ok {
			return now, fmt.Errorf("its features %q no longer end with gangtopo's binding to %s", now.Features, strings.Join(d.Bound, ","))
		}
		j.Features = user
	}
	if d.Excluded != "" {
		j.ExcNodes, _ = WithoutNodes(now.ExcNodes, d.Excluded)
	}
	if d.Shape != "" {
		if err := unshape(&j, d); err != nil {
			return now, err
		}
	}
	j.AdminComment = withoutDecision(now.AdminComment)
	j.GangTopology, j.GangTopologyFromEnv = d.Request, false
	return j, nil
}

// unshape turns -N n --gpus-per-node=k, which the rewrite made of
// --gpus=G, back into --gpus=G (with the model the GRES names).
func unshape(j *Job, d Decision) error {
	per, ok, err := parseGPUTres(j.TresPerNode)
	if err != nil || !ok {
		return fmt.Errorf("decision shape=%s, but its GPUs per node %q do not read as GPUs", d.Shape, j.TresPerNode)
	}
	total := d.GPUs
	if total <= 0 {
		total = per.Count * int(j.MinNodes)
	}
	gres := fmt.Sprintf("gres:gpu:%d", total)
	if per.Model != "" {
		gres = fmt.Sprintf("gres:gpu:%s:%d", per.Model, total)
	}
	j.TresPerJob, j.TresPerNode, j.MinNodes, j.MaxNodes = gres, "", 0, 0
	return nil
}

// withoutDecision drops the decision line (and what followed it) from a
// field the rewrite appended it to after " | ".
func withoutDecision(field string) string {
	i := strings.Index(field, decisionMagic)
	if i < 0 {
		return field
	}
	return strings.TrimSuffix(field[:i], " | ")
}

// boundNodes says whether the decision bound the job to nodes (a one-node
// job, nodebind.go) rather than to domains; the names' IDs are returned
// either way, unknown names dropped.
func (dc *Decider) boundNodes(d Decision) (nodes []topology.NodeID, domains []topology.DomainID, byNode bool) {
	c := dc.cluster
	byNode = len(d.Bound) > 0
	for _, name := range d.Bound {
		if n, ok := c.NodeByName(name); ok {
			nodes = append(nodes, n)
			continue
		}
		byNode = false
		if id, ok := c.DomainByName(name); ok {
			domains = append(domains, id)
		}
	}
	return nodes, domains, byNode
}
