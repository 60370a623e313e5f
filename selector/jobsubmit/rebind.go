package jobsubmit

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Re-binding a pending job whose binding went stale.
//
// A decision is made at submit, on the snapshot of that moment, and the
// job may wait long after: the nodes a one-node job was bound to fill up
// while others free, a preferred gang bound to a leaf that had room waits
// for that leaf when another has room now. The job then waits only because
// of its binding (a self-inflicted wait). The controller
// (cmd/gangtopo/internal/controller, rebind.go) asks Rebind about every
// pending job gangtopo bound, each cycle, on the fresh snapshot, and
// carries out what it says through scontrol update.
//
// Stages:
//
//  1. Original: the job as submitted (binding.go); a job whose features
//     changed since, in a way gangtopo cannot undo, is left alone.
//  2. Inside its binding: can the job as Slurm holds it now start inside
//     what it is bound to? The engine places it restricted to the bound
//     nodes (any one of them) or to one of the bound domains (Slurm's
//     matching OR takes all nodes from one alternative), with the
//     exclusions it has now. If it can, the binding is not what keeps it
//     waiting: nothing to do. A binding that can never hold the job (no
//     bound domain is large enough: its size changed since, say) is stale
//     whatever the snapshot says.
//  3. A new decision: the plugin's own (Prepare, Place, Rewrite) about the
//     original job on the same snapshot. The binding is stale only when
//     the new decision starts the job now (placed, or wider for a
//     preferred tier); one that can never hold the job is replaced by any
//     new binding.
//  4. The update: the fields in which the new rewrite differs from the job
//     as Slurm holds it (Update). A new decision that changes nothing is
//     no re-binding.
//
// Why the engine and not a model of Slurm in stage 2: the engine is what
// the plugin trusts at submit, and judging "can start" by the same measure
// at both ends keeps the controller from undoing decisions the plugin
// would make again. Slurm may still not start a job the engine says fits
// (a higher-priority job ahead of it): then the job waits inside a binding
// with room, which is not stale, and is left alone.

// Rebinding is the answer about one pending job.
type Rebinding struct {
	// Stale says the job waits only because of its binding and a new
	// decision starts it; Why says why it is, or is not, in one line.
	Stale bool
	Why   string
	// Result is the new decision (Stale only), Update the fields it
	// changes. Tasks is where the job starts now, to hold there so that
	// the next job in the same cycle does not take it: the new decision's
	// placement (Stale), or one task's inside its binding (a job that can
	// start inside its binding now: Slurm starts it there before any job
	// after it in its order).
	Result Result
	Update Update
	Tasks  []occupancy.Allocation
}

// Rebind decides whether the pending job now (as Slurm holds it, with
// gangtopo's decision d) is stale on snapshot s, and what to change if so.
// gen labels the snapshot in the new decision line. e must not be used by
// anyone else meanwhile.
func (dc *Decider) Rebind(now Job, d Decision, s *occupancy.Snapshot, e *place.Engine, gen uint64) Rebinding {
	if !d.Binds() {
		return Rebinding{Why: "not bound"}
	}
	orig, err := Original(now, d, dc.policy.FeaturePrefix)
	if err != nil {
		return Rebinding{Why: err.Error()}
	}
	p := dc.Prepare(orig)
	if p.Done {
		return Rebinding{Why: fmt.Sprintf("a new decision would not place it (%s: %s)", p.Final.Decision.Verdict, p.Final.Decision.Text)}
	}
	dc.allowSpares(&p, d.Spares)
	inside, never, degraded, err := dc.startsInBinding(now, d, p, s, e)
	if err != nil {
		return Rebinding{Why: "as Slurm holds it, " + err.Error()}
	}
	if inside.Status == place.Placed {
		return Rebinding{Why: "it can start inside its binding now", Tasks: []occupancy.Allocation{inside.Alloc}}
	}
	pl := dc.Place(e, s, p, nil)
	res, err := dc.Rewrite(orig, p, pl, s, gen)
	if err != nil {
		return Rebinding{Why: err.Error()}
	}
	v := res.Decision.Verdict
	starts := v == VerdictPlaced || v == VerdictWider
	healed := degraded && dc.firstHealthy(res.Decision.Bound, p, s)
	if !starts && !never && !healed {
		return Rebinding{Why: fmt.Sprintf("a new decision would not start it now either (%s: %s)", v, res.Decision.Text)}
	}
	if res.Action != Modify {
		return Rebinding{Why: "a new decision would leave it alone"}
	}
	u := diff(now, res.Apply(orig))
	if u.Empty() {
		return Rebinding{Why: "a new decision binds it the same way"}
	}
	why := "it cannot start inside its binding now, and a new decision starts it"
	switch {
	case never:
		why = "its binding can never hold it"
	case healed && !starts:
		why = "failed nodes leave no domain of its binding large enough to hold it until they are repaired; a new decision binds it to one that is"
	}
	return Rebinding{Stale: true, Why: why, Result: res, Update: u, Tasks: pl.Tasks}
}

// startsInBinding is stage 2: where the job as Slurm holds it now starts
// inside its binding on s (Status Placed: it can), whether the binding could never
// hold it on an empty cluster (never), and whether it cannot until failed
// nodes are repaired (degraded: every bound domain too small on its
// healthy nodes). An error says the job as Slurm holds it reads as
// nothing the engine places: it is left alone.
func (dc *Decider) startsInBinding(now Job, d Decision, p Prepared, s *occupancy.Snapshot, e *place.Engine) (inside place.Result, never, degraded bool, err error) {
	r, err := dc.buildRequest(now, p.Option)
	if err != nil {
		return place.Result{}, false, false, err
	}
	r = dc.EngineRequest(Prepared{Request: r}, s)
	nodes, domains, byNode := dc.boundNodes(d)
	switch {
	case byNode:
		// every node of a job must carry the one alternative Slurm picks:
		// a job over several nodes never starts on a node binding
		small := true
		for _, n := range nodes {
			small = small && !dc.couldHold(dc.cluster.Nodes[n].Up[topology.TierNode], r)
		}
		never = r.Nodes > 1 || small
		r.Allowed = intersect(r.Allowed, nodeNames(dc.cluster, nodes))
		r.Tier, r.Mode = topology.TierNode, request.Required
	case len(domains) > 0:
		t := dc.cluster.Domains[domains[0]].Tier
		never, degraded = true, true
		var in []topology.NodeID
		for _, id := range domains {
			dom := &dc.cluster.Domains[id]
			never = never && !dc.couldHold(id, r)
			degraded = degraded && !dc.healthyHold(id, r, s)
			for n := dom.NodeLo; n < dom.NodeHi; n++ {
				in = append(in, n)
			}
		}
		r.Allowed = intersect(r.Allowed, nodeNames(dc.cluster, in))
		r.Tier, r.Mode = t, request.Required
	}
	if len(r.Allowed) == 0 && len(d.Bound) > 0 {
		return place.Result{}, true, false, nil // the user's node list and the binding have no node in common
	}
	return e.Place(s, r), never, degraded && !never, nil
}

// firstHealthy says whether the first of the domains bound is large
// enough on its healthy nodes of s to hold the prepared job: a new
// binding worth making for a job whose bound domains all lost members.
func (dc *Decider) firstHealthy(bound []string, p Prepared, s *occupancy.Snapshot) bool {
	if len(bound) == 0 {
		return false
	}
	id, ok := dc.cluster.DomainByName(bound[0])
	return ok && dc.healthyHold(id, p.Request, s)
}

// nodeNames names nodes.
func nodeNames(c *topology.Cluster, ids []topology.NodeID) []string {
	out := make([]string, len(ids))
	for i, n := range ids {
		out[i] = c.Nodes[n].Name
	}
	return out
}

// intersect is the nodes of b that a allows (a empty: all of b).
func intersect(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	ok := map[string]bool{}
	for _, n := range a {
		ok[n] = true
	}
	var out []string
	for _, n := range b {
		if ok[n] {
			out = append(out, n)
		}
	}
	return out
}

// Apply is job j with the rewrite r applied, as Slurm stores it.
func (r Result) Apply(j Job) Job {
	if r.Action != Modify {
		return j
	}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&j.Features, r.Features)
	set(&j.Prefer, r.Prefer)
	set(&j.ReqNodes, r.ReqNodes)
	set(&j.ExcNodes, r.ExcNodes)
	set(&j.TresPerJob, r.TresPerJob)
	set(&j.TresPerNode, r.TresPerNode)
	set(&j.Comment, r.Comment)
	set(&j.AdminComment, r.AdminComment)
	if r.MinNodes > 0 {
		j.MinNodes = r.MinNodes
	}
	if r.MaxNodes > 0 {
		j.MaxNodes = r.MaxNodes
	}
	if r.SegmentSize > 0 {
		j.SegmentSize = r.SegmentSize
	}
	return j
}

// Update is what to change in a pending job, as `scontrol update` takes
// it: nil fields stay as they are.
type Update struct {
	Features, ExcNodes      *string
	TresPerJob, TresPerNode *string
	// MinNodes, MaxNodes: NumNodes=min-max when MinNodes > 0.
	MinNodes, MaxNodes uint32
	// AdminComment carries the new decision line; it alone is no update.
	AdminComment *string
}

// diff is the update that turns job now into job want, in the fields the
// rewrite sets. The shape (TRES and node counts) is changed only when want
// sets one that differs: one gangtopo set earlier stays valid anywhere.
// A new node count carries the TRES with it when the job's GPUs per node
// differ from want's (4x8 made -N 1: --gpus-per-node=8 on one node would
// be 8 GPUs, not 32).
func diff(now, want Job) Update {
	var u Update
	if want.Features != now.Features {
		u.Features = strptr(want.Features)
	}
	if !sameNodes(want.ExcNodes, now.ExcNodes) {
		u.ExcNodes = strptr(want.ExcNodes)
	}
	if want.TresPerNode != "" && want.MinNodes > 0 &&
		(!sameTres(want.TresPerNode, now.TresPerNode) || want.MinNodes != now.MinNodes || want.MaxNodes != now.MaxNodes) {
		u.TresPerJob, u.TresPerNode = strptr(want.TresPerJob), strptr(want.TresPerNode)
		u.MinNodes, u.MaxNodes = want.MinNodes, want.MaxNodes
	} else if want.MinNodes > 0 && (want.MinNodes != now.MinNodes || want.MaxNodes != now.MaxNodes) {
		u.MinNodes, u.MaxNodes = want.MinNodes, want.MaxNodes
		if !sameTres(want.TresPerNode, now.TresPerNode) {
			u.TresPerJob, u.TresPerNode = strptr(want.TresPerJob), strptr(want.TresPerNode)
		}
	}
	if !u.Empty() && want.AdminComment != now.AdminComment {
		u.AdminComment = strptr(want.AdminComment)
	}
	return u
}

// Apply is job j with update u carried out, as Slurm stores it after
// `scontrol update` (NumNodes=n sets both bounds to n): how the replay's
// model of the controller (selector/sim/deployed) carries a re-binding
// out, as the controller does through scontrol.
func (u Update) Apply(j Job) Job {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&j.Features, u.Features)
	set(&j.ExcNodes, u.ExcNodes)
	set(&j.TresPerJob, u.TresPerJob)
	set(&j.TresPerNode, u.TresPerNode)
	set(&j.AdminComment, u.AdminComment)
	if u.MinNodes > 0 {
		j.MinNodes, j.MaxNodes = u.MinNodes, max(u.MaxNodes, u.MinNodes)
	}
	return j
}

// sameTres compares two TRES strings as Slurm means them: the plugin
// writes "gres:gpu:8", Slurm 23.02 and later list it as "gres/gpu:8".
func sameTres(a, b string) bool {
	return strings.ReplaceAll(a, "gres/", "gres:") == strings.ReplaceAll(b, "gres/", "gres:")
}

// sameNodes compares two host lists as node sets.
func sameNodes(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := WithNodes(a, "", hostlist.MaxHosts)
	y, err2 := WithNodes(b, "", hostlist.MaxHosts)
	return err1 == nil && err2 == nil && x == y
}

// Empty says the update changes nothing that matters for scheduling.
func (u Update) Empty() bool {
	return u.Features == nil && u.ExcNodes == nil && u.TresPerJob == nil && u.TresPerNode == nil && u.MinNodes == 0
}

// Args are the update as scontrol's key=value arguments (after JobId=),
// each one argument of its own (no shell quoting needed).
func (u Update) Args() []string {
	var out []string
	add := func(k string, v *string) {
		if v != nil {
			out = append(out, k+"="+*v)
		}
	}
	add("Features", u.Features)
	add("ExcNodeList", u.ExcNodes)
	add("TresPerJob", u.TresPerJob)
	add("TresPerNode", u.TresPerNode)
	if u.MinNodes > 0 {
		n := strconv.FormatUint(uint64(u.MinNodes), 10)
		if u.MaxNodes > 0 && u.MaxNodes != u.MinNodes {
			n += "-" + strconv.FormatUint(uint64(u.MaxNodes), 10)
		}
		out = append(out, "NumNodes="+n)
	}
	add("AdminComment", u.AdminComment)
	return out
}

// String is the update for log lines: the scheduling fields, not the
// decision line.
func (u Update) String() string {
	var parts []string
	for _, a := range u.Args() {
		if !strings.HasPrefix(a, "AdminComment=") {
			parts = append(parts, fmt.Sprintf("%q", a))
		}
	}
	return strings.Join(parts, " ")
}
