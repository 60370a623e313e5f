package jobsubmit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The rewrite turns the engine's placement into job fields that make
// Slurm's own scheduler carry it out, and that stay right when the cluster
// changes between submit (now) and start (a second later, or much later
// for a job that waits).
//
// What goes stale, and the choice made for it (docs/admin.md, "What the
// rewrite means"):
//
//   - A pinned node list (req_nodes) goes stale first: another job can take
//     one of its GPUs a second later and the job then waits for exactly
//     those nodes while others are free. gangtopo never pins nodes.
//   - Domains go stale slowly, so the binding is by domain: node features
//     gt_<domain> with Slurm's matching OR, "[gt_leaf4|gt_leaf3|...]",
//     listing every domain of the requested tier that could ever hold the
//     gang, the engine's choice first and its ranked alternatives next.
//     Slurm starts the job in the first listed domain that has room when it
//     schedules, so a domain taken meanwhile costs nothing.
//   - required binds through `features`; preferred binds the same way when
//     the tier has room at submit, and not at all when only a wider place
//     has room (the job then starts wider, now). Slurm's --prefer is not
//     used (see bind).
//   - A preferred job that has no room anywhere at submit waits whatever
//     gangtopo writes, and starts when Slurm finds room, before any later
//     decision could steer it. One that fits a node keeps the form the
//     engine would try first: one node (-N 1, see waiting). Left free,
//     Slurm starts it in the first GPUs that free, split over nodes,
//     where it runs slower and holds its GPUs longer. A preferred gang
//     larger than a node is left free (bound to its tier's domains, its
//     16+ GPU waits grew on the Philly replay). The -N 1 stays (the controller's
//     update keeps a node count gangtopo set, rebind.go): the job waits
//     for a node rather than starting split. docs/benchmarks.md ("Gangs
//     over time") measures the trade on the Philly replay.
//   - The shape (tres_per_node with -N) follows the engine when the user
//     gave only a GPU total and the engine chose whole uniform nodes: a
//     32-GPU gang becomes 4 x 8. Shapes do not go stale.
//   - Single-node jobs on a partly used node exclude the whole free nodes
//     (exc_nodes), so Slurm fills holes instead of breaking whole nodes.
//     This one can go stale (all holes taken before the job starts); the
//     store's held decisions (PendingHold) keep a burst of submissions from
//     walking into it.

// placed builds the rewrite for a placed gang (for an array, its tasks
// placed now: pl.Tasks).
func (dc *Decider) placed(j Job, p Prepared, pl Placement, s *occupancy.Snapshot, gen uint64) Result {
	c := dc.cluster
	req, res := p.Request, pl.Result
	d := Decision{Verdict: VerdictPlaced, Request: p.Option.String(), GPUs: req.GPUs, Snapshot: gen,
		Domain: c.Domains[res.Domain].Name, Tier: res.Tier.String(), Models: req.Models, Hold: p.Hold, Text: res.Message + dc.advisoryNote(req, res)}
	if res.Widened {
		d.Verdict = VerdictWider
	}
	dc.countTasks(j, p, pl, &d)
	out := Result{Action: Modify}
	if nodes := dc.onOneNode(j, pl, s); nodes != nil {
		// one node: the ranked nodes, which lie inside any domain the
		// request names
		out.Features = strptr(andFeatures(j.Features, dc.featureExpr(nodes)))
		out.MinNodes, out.MaxNodes = 1, 1
		d.Bound = nodes
		dc.recordExclusions(p, &out, &d, nil)
		return dc.withDecision(j, out, d)
	}
	d.Bound = dc.bind(j, p, pl, s, &out)
	if shape := dc.shape(j, req, res, &out); shape != "" {
		d.Shape = shape
	}
	dc.segment(j, req, &out, &d)
	var whole []string
	if len(res.Alloc.Nodes) == 1 && j.ReqNodes == "" {
		whole = dc.keepWholeNodes(req.Excluded, pl, s, &out)
	}
	dc.recordExclusions(p, &out, &d, whole)
	return dc.withDecision(j, out, d)
}

// countTasks records a job array's tasks in the decision, and says when
// fewer than the tasks that may run at once have room now.
func (dc *Decider) countTasks(j Job, p Prepared, pl Placement, d *Decision) {
	if j.ArrayInx == "" {
		return
	}
	d.Tasks = p.Tasks
	if len(pl.Tasks) < p.Tasks {
		d.Text += fmt.Sprintf("; %d of the %d tasks that may run at once have room now", len(pl.Tasks), p.Tasks)
	}
}

// onOneNode is the node binding of a one-node placement (nodebind.go),
// nil when it does not apply: the user named nodes, or nodes cannot be
// bound.
func (dc *Decider) onOneNode(j Job, pl Placement, s *occupancy.Snapshot) []string {
	if j.ReqNodes != "" {
		return nil
	}
	return dc.nodeBinding(pl, s)
}

// waiting builds the rewrite for a valid gang that has no room now: it is
// bound like a placed one (so it starts in the first domain that frees);
// a preferred one that fits a node is kept on one node (keepOnOneNode);
// it pends with Slurm's own reason, and the decision says why. The
// controller re-binds a bound one if it later waits only because of its
// binding (rebind.go); the one-node form stays.
func (dc *Decider) waiting(j Job, p Prepared, res place.Result, s *occupancy.Snapshot, gen uint64) Result {
	d := Decision{Verdict: VerdictWaiting, Request: p.Option.String(), GPUs: p.Request.GPUs, Models: p.Request.Models, Snapshot: gen, Text: res.Message}
	if j.ArrayInx != "" {
		d.Tasks = p.Tasks
	}
	out := Result{Action: Modify}
	if dc.keepOnOneNode(j, p) {
		out.MinNodes, out.MaxNodes = 1, 1
		d.Text += "; it starts on the first node with room for it"
	} else {
		d.Bound = dc.bind(j, p, Placement{Result: res}, s, &out)
		d.Shape = dc.spanShape(j, p.Request, &out)
		if d.Shape == "" {
			d.Shape = dc.requestShape(p, &out)
		}
		dc.segment(j, p.Request, &out, &d)
	}
	if len(d.Bound) > 0 {
		d.Text += "; it starts in the first of " + strings.Join(d.Bound, ", ") + " that has room"
	}
	dc.recordExclusions(p, &out, &d, nil)
	return dc.withDecision(j, out, d)
}

// keepOnOneNode says whether a waiting job is kept on one node: a
// preferred job of several GPUs whose user fixed no node count or GPUs per
// node, which some node of the cluster could hold whole. The engine would
// try one node first; a job that can start nowhere now starts when Slurm
// finds room, and Slurm, free to split --gpus=G, takes the first GPUs
// that free wherever they are.
func (dc *Decider) keepOnOneNode(j Job, p Prepared) bool {
	req := p.Request
	if p.Option.Mode != request.Preferred || req.GPUs < 2 || req.Nodes > 1 || j.MinNodes > 0 ||
		j.TresPerNode != "" || j.TresPerTask != "" || j.ArrayInx != "" {
		return false
	}
	for _, n := range dc.cluster.ByTier[topology.TierNode] {
		if dc.couldHold(n, req) {
			return true
		}
	}
	return false
}

// bind sets features to the domains of the requested tier, best first;
// one-node tiers become -N 1. It returns the bound domains' names.
//
// required always binds. preferred binds only when the engine found room
// inside the tier now; when it had to go wider (or found no room at all)
// the job is left free to start wider (a waiting one that fits a node is
// kept on one node instead, keepOnOneNode). Slurm's own --prefer is not used: in 22.05 a job
// whose preferred nodes exist but are busy waits for them (reason
// Priority), which is what required means, not preferred.
func (dc *Decider) bind(j Job, p Prepared, pl Placement, s *occupancy.Snapshot, out *Result) []string {
	req, res := p.Request, pl.Result
	if p.Option.Mode == request.Preferred && (res.Status != place.Placed || res.Widened) {
		return nil
	}
	t := req.EffectiveTier()
	if t <= topology.TierNode && !dc.nvlinkBlocks(t) {
		if req.Nodes <= 1 {
			out.MinNodes, out.MaxNodes = 1, 1
		}
		return nil
	}
	if t == topology.TierNVLink {
		t = topology.TierBlock // multi-node NVLink domains are blocks
	}
	if t == topology.TierCluster {
		return nil
	}
	names := dc.rankedDomains(j, req, t, pl, s)
	if p.OnlyFirst && len(names) > 1 {
		names = names[:1]
	}
	if len(names) > 0 {
		out.Features = strptr(andFeatures(j.Features, dc.featureExpr(names)))
	}
	return names
}

// nvlinkBlocks reports whether tier nvlink means multi-node NVLink blocks
// on this cluster (a GB200 NVL72), where binding goes through features.
func (dc *Decider) nvlinkBlocks(t topology.Tier) bool {
	if t != topology.TierNVLink {
		return false
	}
	for _, d := range dc.cluster.ByTier[topology.TierBlock] {
		if dc.cluster.Domains[d].NVLink {
			return true
		}
	}
	return false
}

// rankedDomains lists the domains of tier t that could ever hold the gang:
// the one holding the engine's placement, those holding an array's other
// tasks, those holding its alternatives, then the rest, the most free GPUs
// first (ties in tree order): the closest to fitting first. Slurm takes the
// first alternative that can start the job; where it preempts (a gang of a
// higher PriorityTier or QOS), that is the first where preempting makes
// room, so the closest to fitting is where it preempts the fewest GPUs; at
// most maxAlternatives (Slurm's limit),
// and only domains whose feature a node carries when the snapshot reports
// features (Slurm refuses a job bound to a feature no node has).
func (dc *Decider) rankedDomains(j Job, req request.Request, t topology.Tier, pl Placement, s *occupancy.Snapshot) []string {
	c := dc.cluster
	seen := map[topology.DomainID]bool{}
	var out []string
	add := func(d topology.DomainID) {
		if d == topology.NoDomain || seen[d] || c.Domains[d].Tier != t || len(out) >= maxAlternatives ||
			!dc.couldHold(d, req) || !dc.tasksFit(j, req.GPUs, domainNodes(c, d), false) || !dc.carried(s, d) {
			return
		}
		seen[d] = true
		out = append(out, c.Domains[d].Name)
	}
	if res := pl.Result; res.Status == place.Placed {
		add(ancestor(c, res.Domain, t))
		for _, a := range pl.Tasks {
			add(c.Nodes[a.Nodes[0].Node].Up[t])
		}
		for _, a := range res.Alternatives {
			add(ancestor(c, a, t))
		}
	}
	for _, d := range mostFree(c, s, t) {
		add(d)
	}
	return dc.degradedLast(out, req, s)
}

// degradedLast moves the domains whose failed members (down, drained)
// leave too little of them to hold the gang behind the others, keeping
// each group's order: Slurm takes the first alternative that can start
// the job, and one that cannot until a repair should not come before one
// that can when its jobs end. They stay listed: when every domain of the
// tier is degraded, the first repaired is where the gang starts.
func (dc *Decider) degradedLast(names []string, req request.Request, s *occupancy.Snapshot) []string {
	if s == nil {
		return names
	}
	var healthy, degraded []string
	for _, name := range names {
		if id, ok := dc.cluster.DomainByName(name); ok && !dc.healthyHold(id, req, s) {
			degraded = append(degraded, name)
			continue
		}
		healthy = append(healthy, name)
	}
	return append(healthy, degraded...)
}

// allocNodes lists an allocation's nodes.
func allocNodes(a occupancy.Allocation) []topology.NodeID {
	out := make([]topology.NodeID, len(a.Nodes))
	for i, na := range a.Nodes {
		out[i] = na.Node
	}
	return out
}

// domainNodes lists domain d's nodes.
func domainNodes(c *topology.Cluster, d topology.DomainID) []topology.NodeID {
	dom := &c.Domains[d]
	out := make([]topology.NodeID, 0, dom.NodeHi-dom.NodeLo)
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		out = append(out, n)
	}
	return out
}

// mostFree lists the domains of tier t, the most free GPU capacity on
// usable nodes first, ties in tree order (tree order alone without a
// snapshot).
func mostFree(c *topology.Cluster, s *occupancy.Snapshot, t topology.Tier) []topology.DomainID {
	ids := append([]topology.DomainID(nil), c.ByTier[t]...)
	if s == nil {
		return ids
	}
	free := make(map[topology.DomainID]int, len(ids))
	for _, d := range ids {
		dom := &c.Domains[d]
		for n := dom.NodeLo; n < dom.NodeHi; n++ {
			if s.State[n].Usable() {
				free[d] += s.IdleMilli(n)
			}
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return free[ids[i]] > free[ids[j]] })
	return ids
}

// carried says whether Slurm's nodes carry domain d's feature: a node of
// d has it, or the snapshot does not report features (the cluster file is
// then trusted).
func (dc *Decider) carried(s *occupancy.Snapshot, d topology.DomainID) bool {
	if s == nil || s.Features == nil {
		return true
	}
	dom := &dc.cluster.Domains[d]
	f := DomainFeature(dc.policy.FeaturePrefix, dom.Name)
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		if has, _ := s.HasFeature(n, f); has {
			return true
		}
	}
	return false
}

// ancestor is d's enclosing domain of tier t (d itself if it has tier t).
func ancestor(c *topology.Cluster, d topology.DomainID, t topology.Tier) topology.DomainID {
	if d == topology.NoDomain {
		return d
	}
	return c.Nodes[c.Domains[d].NodeLo].Up[t]
}

// couldHold is a static capacity check: enough GPUs of an acceptable model
// in the domain (and enough nodes with GPUsPerNode of them, for a fixed
// shape), ignoring occupancy.
func (dc *Decider) couldHold(d topology.DomainID, req request.Request) bool {
	return dc.holds(d, req, nil)
}

// healthyHold is couldHold over the domain's healthy nodes on s: those
// whose state takes new jobs (not down, drained or failing). A domain
// with failed members holds a gang only as large as what is left of it
// until they are repaired.
func (dc *Decider) healthyHold(d topology.DomainID, req request.Request, s *occupancy.Snapshot) bool {
	return dc.holds(d, req, s)
}

// holds counts the domain's GPUs of an acceptable model, on the nodes s
// says are healthy (s nil: all of them).
func (dc *Decider) holds(d topology.DomainID, req request.Request, s *occupancy.Snapshot) bool {
	c := dc.cluster
	dom := &c.Domains[d]
	total, nodes := 0, 0
	for n := dom.NodeLo; n < dom.NodeHi; n++ {
		if s != nil && !s.State[n].Usable() {
			continue
		}
		k := 0
		node := &c.Nodes[n]
		for gi := node.GPULo; gi < node.GPUHi; gi++ {
			if modelOK(c, c.GPUs[gi].Model, req.Models) {
				k++
			}
		}
		total += k
		if req.GPUsPerNode > 0 && k >= req.GPUsPerNode {
			nodes++
		}
	}
	return total >= req.GPUs && (req.GPUsPerNode == 0 || nodes >= req.Nodes)
}

func modelOK(c *topology.Cluster, m topology.ModelID, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if topology.CanonicalModel(w) == c.ModelName(m) {
			return true
		}
	}
	return false
}

// featureExpr is Slurm's matching OR over the domains' features.
func (dc *Decider) featureExpr(names []string) string {
	fs := make([]string, len(names))
	for i, n := range names {
		fs[i] = DomainFeature(dc.policy.FeaturePrefix, n)
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return "[" + strings.Join(fs, "|") + "]"
}

// andFeatures adds gangtopo's expression to the user's own constraint.
func andFeatures(user, ours string) string {
	if user == "" {
		return ours
	}
	return "(" + user + ")&" + ours
}

// shape rewrites --gpus=G into -N n --gpus-per-node=k when the engine
// placed the gang on n nodes with k GPUs each and the user fixed neither.
func (dc *Decider) shape(j Job, req request.Request, res place.Result, out *Result) string {
	if j.TresPerNode != "" || j.TresPerTask != "" || j.MinNodes > 0 || len(res.Alloc.Nodes) < 2 {
		return ""
	}
	k := len(res.Alloc.Nodes[0].GPUs)
	for _, na := range res.Alloc.Nodes {
		if len(na.GPUs) != k {
			return "" // uneven: Slurm cannot express it without pinning
		}
	}
	if !dc.tasksFit(j, req.GPUs, allocNodes(res.Alloc), true) {
		return "" // Slurm could not lay the tasks out on n nodes
	}
	return setShape(req, len(res.Alloc.Nodes), k, out)
}

// setShape writes n nodes of k GPUs each (-N n --gpus-per-node=k, of the
// request's model when it names one) in place of the job's GPU total, and
// returns the shape as the decision records it ("4x8").
func setShape(req request.Request, n, k int, out *Result) string {
	gres := fmt.Sprintf("gres:gpu:%d", k)
	if len(req.Models) == 1 {
		gres = fmt.Sprintf("gres:gpu:%s:%d", req.Models[0], k)
	}
	out.TresPerJob, out.TresPerNode = strptr(""), strptr(gres)
	out.MinNodes, out.MaxNodes = uint32(n), uint32(n)
	return fmt.Sprintf("%dx%d", n, k)
}

// keepWholeNodes excludes the whole free nodes when the engine put a
// one-node job on a partly used node (a hole exists), so Slurm's own
// node order does not break a whole node instead; for an array, the whole
// nodes its later tasks were placed on stay allowed. user is the
// request's exclusions: the job's own --exclude, as the request expanded
// it (whole: a comma inside brackets, "node[03,16]", separates numbers,
// not names), and the spares it keeps off. It returns the nodes it added
// and none of those, which the decision records (recordExclusions) so that
// `gangtopo unbind` and the controller can take out exactly those again.
func (dc *Decider) keepWholeNodes(user []string, pl Placement, s *occupancy.Snapshot, out *Result) []string {
	c := dc.cluster
	chosen := pl.Alloc.Nodes[0].Node
	if s.IsIdle(chosen) {
		return nil // the engine itself opened a whole node: nothing to protect
	}
	excl := map[string]bool{}
	names := make([]string, 0, len(user))
	for _, x := range user {
		if !excl[x] {
			excl[x] = true
			names = append(names, x)
		}
	}
	used := map[topology.NodeID]bool{}
	for _, a := range pl.Tasks {
		for _, na := range a.Nodes {
			used[na.Node] = true
		}
	}
	var added []string
	for i := range c.Nodes {
		// a node without GPUs has none to keep whole
		id := topology.NodeID(i)
		if c.Nodes[i].NumGPUs() > 0 && s.IsWholeNodeFree(id) && !used[id] && !excl[c.Nodes[i].Name] {
			excl[c.Nodes[i].Name] = true
			added = append(added, c.Nodes[i].Name)
		}
	}
	if len(added) > 0 {
		out.ExcNodes = strptr(hostlist.Compress(append(names, added...)))
	}
	return added
}

// recordExclusions records in the decision (excluded=) what gangtopo
// added to the job's ExcNodeList: the spares prepared job p keeps off
// (spares.go) and whole, the whole nodes keepWholeNodes added; and the
// domains whose spares p may use (spares=). out.ExcNodes, when the rewrite
// set it already, holds the spares (keepWholeNodes built it from
// p.Request.Excluded); else it becomes the request's exclusions, the
// user's and the spares.
func (dc *Decider) recordExclusions(p Prepared, out *Result, d *Decision, whole []string) {
	d.Spares = p.SpareDomains
	if len(p.Spared) > 0 && out.ExcNodes == nil {
		out.ExcNodes = strptr(hostlist.Compress(p.Request.Excluded))
	}
	if added := append(slices.Clone(p.Spared), whole...); len(added) > 0 {
		d.Excluded = hostlist.Compress(added)
	}
}

// withDecision records the decision in the configured field and logs it.
// What the field held (the user's comment, or an AdminComment an earlier
// job_submit plugin or an administrator set) is kept, the decision
// appended after " | ". The rewrite is fitted to Slurm's byte limits
// first (limits.go); one that cannot fit leaves the job as submitted.
func (dc *Decider) withDecision(j Job, out Result, d Decision) Result {
	out, d, note, ok := dc.fit(j, out, d)
	if !ok {
		return dc.overLimits(j, d, note)
	}
	line := d.String()
	if dc.policy.DecisionField == FieldComment {
		out.Comment = strptr(appendLine(j.Comment, line))
	} else {
		out.AdminComment = strptr(appendLine(j.AdminComment, line))
	}
	out.Decision, out.LogLevel, out.Log = d, LogInfo, fmt.Sprintf("%s: %s", JobLabel(j), line)
	if note != "" {
		out.Log += " (" + note + ")"
	}
	return out
}

// overLimits is the answer for a rewrite that does not fit Slurm's limits:
// the job as submitted, said in an untouched line if that fits, else only
// in the log.
func (dc *Decider) overLimits(j Job, d Decision, why string) Result {
	if d.Verdict != VerdictUntouched {
		return dc.untouched(j, d.Request, d.GPUs, CauseSlurmLimit, why)
	}
	d.Text = why
	return Result{LogLevel: LogInfo, Log: fmt.Sprintf("%s: %s (not recorded in the job: %s)", JobLabel(j), d, why), Decision: d}
}

func strptr(s string) *string { return &s }

func appendLine(field, line string) string {
	if field == "" {
		return line
	}
	return field + " | " + line
}
