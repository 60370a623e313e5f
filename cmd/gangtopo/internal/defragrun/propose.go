package defragrun

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// HoldPrefix begins the name of every reservation gangtopo holds freed
// room with: gangtopo_defrag_<gang job>.
const HoldPrefix = "gangtopo_defrag_"

// HoldName is the reservation holding room for a gang.
func HoldName(gang string) string {
	var b strings.Builder
	for _, r := range gang {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return HoldPrefix + b.String()
}

// Planner makes plans for pending gangs under gangtopo.yaml: the plugin's
// policy reads the gang's request, the defrag: section says what may be
// taken and at what cost, the History what was done already.
type Planner struct {
	Config  ctld.Config
	Cluster *topology.Cluster
	History *defrag.History
	dec     *jobsubmit.Decider
	eng     *place.Engine
}

// NewPlanner makes a planner for cluster c.
func NewPlanner(cfg ctld.Config, c *topology.Cluster, h *defrag.History) (*Planner, error) {
	dec, err := jobsubmit.New(cfg.Policy, c)
	if err != nil {
		return nil, err
	}
	if h == nil {
		h = &defrag.History{}
	}
	return &Planner{Config: cfg, Cluster: c, History: h, dec: dec, eng: place.New(c, place.Options{})}, nil
}

// Gang is a pending gang as the planner reads it: its decision, its
// request, and the domains its binding allows.
type Gang struct {
	Job      slurmstate.PendingJob
	Decision jobsubmit.Decision
	Request  request.Request
	Domains  []topology.DomainID
}

// BadInput is a gang the planner cannot plan for, whatever the cluster's
// state: no gangtopo decision, no GPUs, too large for any domain.
type BadInput struct{ Msg string }

func (e *BadInput) Error() string { return e.Msg }

// Gang reads a pending job as a gang to plan for.
func (p *Planner) Gang(pj slurmstate.PendingJob) (Gang, error) {
	d, err := jobsubmit.ParseDecision(pj.Decision)
	if err != nil {
		return Gang{}, &BadInput{fmt.Sprintf("job %s has no gangtopo decision in its AdminComment: defragmentation plans for jobs the plugin decided about", pj.ID)}
	}
	r, err := p.dec.JobRequest(pj.Job)
	if err != nil {
		return Gang{}, &BadInput{fmt.Sprintf("job %s: %v", pj.ID, err)}
	}
	if o, err := request.ParseOption(d.Request); err == nil && d.Request != "" {
		o.Apply(&r)
	}
	r.JobID = pj.ID
	if r.GPUs == 0 {
		return Gang{}, &BadInput{fmt.Sprintf("job %s asks for no GPUs: there is nothing to defragment for", pj.ID)}
	}
	g := Gang{Job: pj, Decision: d, Request: r}
	tier := r.EffectiveTier()
	// every bound domain, whatever its tier (a node for the one-node form,
	// a leaf for a gang whose own tier is wider or narrower): a plan
	// outside them frees room the job's binding keeps it out of
	for _, name := range d.Bound {
		if id, ok := p.Cluster.DomainByName(name); ok {
			g.Domains = append(g.Domains, id)
		}
	}
	if len(d.Bound) > 0 && len(g.Domains) == 0 {
		return Gang{}, &BadInput{fmt.Sprintf("job %s is bound to %s, which cluster %s does not have: no plan (was the cluster file changed since its decision?)",
			pj.ID, strings.Join(d.Bound, ","), p.Cluster.Name)}
	}
	if _, ok := defrag.For(p.eng, occupancy.New(p.Cluster), r, defrag.Options{Domains: g.Domains}); !ok {
		return Gang{}, &BadInput{fmt.Sprintf("job %s (%s) can never fit: no %s of %s it may use holds it even with every job gone",
			pj.ID, describe(r), tier, p.Cluster.Name)}
	}
	return g, nil
}

// describe is a request in a few words: "32 GPUs, leaf:required".
func describe(r request.Request) string {
	o := request.Option{Tier: r.EffectiveTier(), Mode: r.Mode, Slice: r.Slice}
	return fmt.Sprintf("%d GPUs, %s", r.GPUs, o)
}

// Victim is a job a proposal takes.
type Victim struct {
	ID, User, Partition string
	Nodes               string // host list
	GPUs                int
	Ran                 time.Duration // since its start or checkpoint
	Lost, Cost          float64       // GPU-hours lost; weighted cost
}

// Proposal is a plan for one gang, priced.
type Proposal struct {
	Gang     Gang
	Plan     defrag.Plan
	Victims  []Victim
	Lost     float64 // GPU-hours lost, summed
	FitsNow  bool    // nothing to take: Slurm starts the gang when it schedules
	Domain   string  // the plan's domain
	GangNode string  // the nodes the gang goes to (host list)
	// Limit is the limit that refuses the plan (*defrag.LimitError), nil
	// when it is allowed.
	Limit error
	// Skipped counts, by reason, the running jobs of the gang's domains
	// that may not be taken.
	Skipped map[string]int
}

// Propose plans for gang g on view v; only, when not empty, narrows the
// domains to those. ok is false when no plan exists (Skipped says what
// kept the jobs out).
func (p *Planner) Propose(v *View, g Gang, only []topology.DomainID) (*Proposal, bool) {
	return p.propose(v, g, only, p.Config.Defrag.Scope.Why, true)
}

// ProposePreemption plans the room Slurm's own preemption would free for
// gang g: the victims are the jobs rule lets the gang preempt (and that
// frees their GPUs), chosen so the room is one compact domain at the least
// cost. The limits do not apply: Slurm preempts, gangtopo only pins the
// gang to the nodes (ReqNodeList).
func (p *Planner) ProposePreemption(v *View, g Gang, rule defrag.Preemption) (*Proposal, bool) {
	gang := JobOf(g.Job.Facts, g.Job.Job.Partition)
	why := func(victim defrag.Job) string {
		if rule.Frees(gang, victim, v.At) {
			return ""
		}
		return "Slurm's preemption rule does not let the gang preempt it (or preempting it keeps its GPUs)"
	}
	return p.propose(v, g, nil, why, false)
}

// propose plans for g with the jobs whyNot lets be taken; limits says
// whether the History's limits apply.
func (p *Planner) propose(v *View, g Gang, only []topology.DomainID, whyNot func(defrag.Job) string, limits bool) (*Proposal, bool) {
	s, now := v.Snapshot, v.At
	cfg := p.Config.Defrag
	pr := &Proposal{Gang: g, Skipped: map[string]int{}}
	jobs := make([]defrag.Job, len(s.Jobs))
	ok := make([]bool, len(s.Jobs))
	for j := range s.Jobs {
		ok[j] = p.evictable(v, g, j, &jobs[j], pr.Skipped, whyNot, limits)
	}
	ref := g.Job.Priority
	cost := func(j int) float64 { return cfg.Cost.Cost(jobs[j], s.Jobs[j].Alloc.NumGPUs(), now, ref) }
	domains := g.Domains
	if len(only) > 0 {
		domains = only
	}
	plan, found := defrag.For(p.eng, s, g.Request, defrag.Options{Evictable: func(j int) bool { return ok[j] }, Cost: cost, Domains: domains})
	if !found {
		return pr, false
	}
	pr.Plan, pr.FitsNow = plan, len(plan.Evict) == 0
	pr.Domain = p.Cluster.Domains[plan.Domain].Name
	pr.GangNode = hostlist.Compress(place.NodeNames(p.Cluster, plan.Gang.Alloc))
	for _, j := range plan.Evict {
		job := &s.Jobs[j]
		gpus := job.Alloc.NumGPUs()
		since := jobs[j].Start
		if jobs[j].Checkpoint.After(since) {
			since = jobs[j].Checkpoint
		}
		vi := Victim{ID: job.ID, User: job.User, Partition: job.Partition, GPUs: gpus,
			Nodes: hostlist.Compress(place.NodeNames(p.Cluster, job.Alloc)), Ran: max(now.Sub(since), 0),
			Lost: cfg.Cost.Lost(jobs[j], gpus, now), Cost: cost(j)}
		pr.Victims = append(pr.Victims, vi)
		pr.Lost += vi.Lost
	}
	sort.SliceStable(pr.Victims, func(a, b int) bool { return pr.Victims[a].ID < pr.Victims[b].ID })
	if !pr.FitsNow && limits {
		pr.Limit = p.History.Allow(len(pr.Victims), pr.Lost, p.Cluster.NumGPUs(), now, cfg.Limits)
	}
	return pr, true
}

// evictable says whether job j may be taken for gang g, filling in what
// the cost model reads; a job that may not is counted under its reason.
func (p *Planner) evictable(v *View, g Gang, j int, dj *defrag.Job, skipped map[string]int, whyNot func(defrag.Job) string, limits bool) bool {
	job := &v.Snapshot.Jobs[j]
	f, known := v.Facts[job.ID]
	*dj = JobOf(f, job.Partition)
	why := ""
	switch {
	case job.ID == g.Job.ID:
		return false
	case !known || !f.Known:
		why = "Slurm's facts about it are unknown (jobs not read from squeue --json)"
	case strings.HasPrefix(f.Reservation, HoldPrefix):
		why = "it runs in room gangtopo holds for a gang"
	case limits && p.History.Protected(job.ID, v.At, p.Config.Defrag.Limits):
		why = fmt.Sprintf("it was requeued, or started by a plan, within defrag.requeue_window (%s)", p.Config.Defrag.Limits.Window)
	default:
		why = whyNot(*dj)
	}
	if why != "" {
		skipped[why]++
		return false
	}
	return true
}
