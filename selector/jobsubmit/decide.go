package jobsubmit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Action is what the C shim does with a job.
type Action int

// Actions; the values are the ABI's enum gt_action.
const (
	Keep   Action = 0
	Modify Action = 1
	Reject Action = 2
)

// LogLevel is the level of Result.Log; the values are the ABI's.
type LogLevel int

// Log levels.
const (
	LogNone  LogLevel = 0
	LogDebug LogLevel = 1
	LogInfo  LogLevel = 2
	LogError LogLevel = 3
)

// Result is the decision about one job. For Modify, every non-nil field
// replaces the job's ("" clears it); MinNodes/MaxNodes when > 0.
type Result struct {
	Action   Action
	LogLevel LogLevel
	Log      string
	ErrMsg   string // Reject: shown to the user

	Features, Prefer, ReqNodes, ExcNodes *string
	TresPerJob, TresPerNode              *string
	MinNodes, MaxNodes                   uint32
	// SegmentSize, when > 0, is Slurm's --segment for the job (segment.go;
	// ignored by a shim built for a Slurm older than 24.05).
	SegmentSize           uint32
	Comment, AdminComment *string

	Decision Decision // what was decided (zero for jobs out of scope)
}

// Decider turns a submitted job into a rewrite, for one policy and one
// cluster. It is pure: the snapshot and the engine's answer come from the
// caller, so the plugin inside slurmctld (spank/ctld, with its snapshot
// file, holds and deadline) and the simulators (selector/sim) run the same
// decision. A Decider is read-only after New and safe for concurrent use.
type Decider struct {
	policy  Policy
	cluster *topology.Cluster
	// blockNodeGPUs is place.BlockNodeGPUs of the cluster (segment.go).
	blockNodeGPUs int
	// nodeBound is NodeListBound of the cluster (nodelist.go).
	nodeBound int
	// spares are SpareNodes of the policy (spares.go).
	spares []topology.NodeID
	// nodeGPUs is uniformNodeGPUs of the cluster (wholenodes.go).
	nodeGPUs int

	// unbindable's cache: the nodes of the last feature table seen
	unbindMu    sync.Mutex
	unbindKey   *[]string
	unbindNodes []string
}

// New makes a decider. It fails when a domain of the cluster cannot be a
// Slurm node feature under the policy's prefix.
func New(p Policy, c *topology.Cluster) (*Decider, error) {
	if _, err := NodeFeatures(c, p.FeaturePrefix); err != nil {
		return nil, err
	}
	if err := CheckSpares(c, p.Spares); err != nil {
		return nil, err
	}
	return &Decider{policy: p, cluster: c, blockNodeGPUs: place.BlockNodeGPUs(c), nodeBound: NodeListBound(c),
		spares: SpareNodes(c, p.Spares), nodeGPUs: uniformNodeGPUs(c)}, nil
}

// Policy returns the decider's policy.
func (dc *Decider) Policy() Policy { return dc.policy }

// Cluster returns the topology the decider places on.
func (dc *Decider) Cluster() *topology.Cluster { return dc.cluster }

// Prepared is a job after the stages that need no snapshot: either a
// final answer (Done: out of scope, refused, or left as submitted), or the
// engine request to place.
type Prepared struct {
	Done    bool
	Final   Result
	Request request.Request
	Option  request.Option
	// Tasks is how many tasks of the job the engine places: a job array's
	// tasks that may run at once (tasks.go), 1 for a job.
	Tasks int
	// Hold is the name the caller gives its hold on a placed job's GPUs,
	// recorded in the decision (Decision.Hold); "" when it holds none.
	Hold string
	// Spared are the spares added to Request.Excluded (spares.go);
	// SpareDomains the domains whose spares the job may use.
	Spared       []string
	SpareDomains []string
	// OnlyFirst binds a gang to the first ranked domain alone, without
	// the alternatives after it (a restart that takes lent spares back,
	// restart.go).
	OnlyFirst bool
	// WholeNodes says the request asks whole nodes where the job gave a
	// GPU total only (wholenodes.go).
	WholeNodes bool
}

// Decide runs every stage with the engine called directly: what the
// simulators do. gen labels the snapshot in the decision line.
func (dc *Decider) Decide(j Job, s *occupancy.Snapshot, gen uint64, e *place.Engine) (Result, error) {
	p := dc.Prepare(j)
	if p.Done {
		return p.Final, nil
	}
	return dc.Rewrite(j, p, dc.Place(e, s, p, nil), s, gen)
}

// EngineRequest is the request the engine places for a prepared job on
// snapshot s: the job's own, with the nodes that cannot be bound excluded
// (unbindable).
func (dc *Decider) EngineRequest(p Prepared, s *occupancy.Snapshot) request.Request {
	r := p.Request
	if bad := dc.unbindable(s); len(bad) > 0 {
		r.Excluded = append(append([]string(nil), r.Excluded...), bad...)
	}
	return r
}

// Prepare runs stages 1 and 2 of a decision.
//
// Stages: (1) scope: jobs without GPUs, outside the configured partitions,
// or (with jobs: gang) without --gang-topology pass untouched and
// silently; (2) the job's option and GPU request become a request.Request,
// and user mistakes (bad option, a tier the cluster lacks, inconsistent
// sizes) are refused with a message. The caller then takes a snapshot and
// runs the engine (3, 4), and Rewrite turns its answer into job fields (5).
func (dc *Decider) Prepare(j Job) Prepared {
	j = j.withoutCPUTres()
	opt, inScope, err := dc.scope(j)
	if err != nil {
		return Prepared{Done: true, Final: dc.refuse(j, "", err.Error())}
	}
	if !inScope {
		return Prepared{Done: true, Final: dc.outOfScope(j)}
	}
	req, err := dc.buildRequest(j, opt)
	var unsupported *unsupportedError
	switch {
	case errors.As(err, &unsupported):
		return Prepared{Done: true, Final: dc.leftAsSubmitted(j, opt, req.GPUs, CauseUnsupported, err)}
	case err != nil:
		return Prepared{Done: true, Final: dc.refuse(j, opt.String(), err.Error())}
	}
	if err := dc.covered(&req); err != nil {
		return Prepared{Done: true, Final: dc.leftAsSubmitted(j, opt, req.GPUs, CauseNotCovered, err)}
	}
	if msg := dc.checkRequest(j, req, opt); msg != "" {
		return Prepared{Done: true, Final: dc.refuse(j, opt.String(), msg)}
	}
	tasks, err := tasksAtOnce(j)
	if err != nil {
		return Prepared{Done: true, Final: dc.leftAsSubmitted(j, opt, req.GPUs, CauseUnsupported, err)}
	}
	p := Prepared{Request: req, Option: opt, Tasks: tasks}
	p.WholeNodes = dc.wholeNodes(j, &p.Request)
	if len(dc.spares) > 0 && !dc.lends(j, req.GPUs) {
		p.Spared = dc.excludeSpares(req)
		p.Request.Excluded = append(slices.Clone(req.Excluded), p.Spared...)
	}
	return p
}

// Rewrite is stage 5: the engine's answer about a prepared job (Place)
// becomes job fields. An engine status it does not know is an error (the
// caller's failure path).
func (dc *Decider) Rewrite(j Job, p Prepared, pl Placement, s *occupancy.Snapshot, gen uint64) (Result, error) {
	j = j.withoutCPUTres()
	switch pl.Status {
	case place.Impossible:
		if pl.Limit != "" && !dc.slurmNever(j, p.Request) {
			// gangtopo's count is an upper bound of Slurm's (slurmcount.go)
			return dc.untouched(j, p.Option.String(), p.Request.GPUs, CauseUnsupported,
				pl.Message+", but "+slurmMay(j, p.Request, pl.Limit)), nil
		}
		return dc.refuse(j, p.Option.String(), pl.Message+dc.sparesNote(p)), nil
	case place.Invalid:
		return dc.refuse(j, p.Option.String(), pl.Message), nil
	case place.NoFit:
		return dc.waiting(j, p, pl.Result, s, gen), nil
	case place.Placed:
		return dc.placed(j, p, pl, s, gen), nil
	}
	return Result{}, fmt.Errorf("engine returned status %v", pl.Status)
}

// scope reads the job's --gang-topology and says whether gangtopo handles
// the job at all.
func (dc *Decider) scope(j Job) (request.Option, bool, error) {
	if !asksGPUs(j) {
		if j.GangTopology != "" && !j.GangTopologyFromEnv {
			return request.Option{}, false, errors.New("--gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)")
		}
		// a default from the environment does not apply to a CPU job
		return request.Option{}, cpuJob(j) && dc.cpuInScope(j), nil
	}
	if !dc.partitionInScope(jobPartition(j)) {
		return request.Option{}, false, nil
	}
	if j.GangTopology == "" {
		return dc.policy.Default, dc.policy.Jobs == ScopeGPU || dc.policy.Jobs == ScopeAll, nil
	}
	o, err := request.ParseOption(j.GangTopology)
	if err != nil {
		return o, false, fmt.Errorf("%s: %v", optionName(j), err)
	}
	return o, true, nil
}

// cpuInScope says whether a job without GPUs is placed: under jobs: all,
// when it runs in a partition of the cluster file. A job without a
// partition goes to Slurm's default partition (jobPartition); when the
// shim could not say which that is, it is placed only on a cluster file
// without partitions (every node in one).
func (dc *Decider) cpuInScope(j Job) bool {
	part := jobPartition(j)
	if dc.policy.Jobs != ScopeAll || !dc.partitionInScope(part) {
		return false
	}
	if len(dc.cluster.Partitions) == 0 {
		return true
	}
	// only where the cluster file describes: CPU jobs of other partitions
	// are no business of gangtopo's, and are not "not covered"
	for _, p := range request.SplitList(part) {
		if _, ok := dc.cluster.PartitionByName(p); ok {
			return true
		}
	}
	return false
}

func (dc *Decider) partitionInScope(p string) bool {
	if len(dc.policy.Partitions) == 0 {
		return true
	}
	for _, want := range dc.policy.Partitions {
		for _, got := range request.SplitList(p) {
			if got == want {
				return true
			}
		}
	}
	return false
}

// checkRequest refuses what can never work on this cluster before the
// snapshot is consulted: an inconsistent request, a tier the cluster does
// not have, a GPU model it does not have.
func (dc *Decider) checkRequest(j Job, r request.Request, o request.Option) string {
	if err := r.Validate(); err != nil {
		return err.Error()
	}
	c := dc.cluster
	if t := r.EffectiveTier(); !c.HasTier(t) {
		return fmt.Sprintf("%s=%s: cluster %s has no %s domains (its tiers: %s)", optionName(j), o, c.Name, t, tierList(c))
	}
	for _, m := range r.Models {
		if _, ok := c.ModelByName(m); !ok {
			return fmt.Sprintf("GPU model %q is not in cluster %s (its GPUs: %s)", m, c.Name, joinOr(c.Models))
		}
	}
	return ""
}

// covered says whether the topology describes the partitions and nodes the
// job names; Slurm may have more (CPU partitions, nodes gangtopo does not
// manage), and such jobs are left to Slurm.
func (dc *Decider) covered(r *request.Request) error {
	c := dc.cluster
	if len(c.Partitions) == 0 {
		r.Partitions = nil // a cluster file without partitions covers them all
	}
	for _, p := range r.Partitions {
		if _, ok := c.PartitionByName(p); !ok {
			return fmt.Errorf("partition %q is not in the cluster file of %s (its partitions: %s)", p, c.Name, strings.Join(c.Partitions, ", "))
		}
	}
	for _, n := range append(append([]string(nil), r.Allowed...), r.Excluded...) {
		if _, ok := c.NodeByName(n); !ok {
			return fmt.Errorf("node %q is not in the cluster file of %s", n, c.Name)
		}
	}
	return nil
}

// refuse rejects the job with a message for the user.
func (dc *Decider) refuse(j Job, req, msg string) Result {
	dec := Decision{Verdict: VerdictRefused, Request: req, Text: msg}
	return Result{Action: Reject, ErrMsg: "gangtopo: " + msg, LogLevel: LogInfo,
		Log: fmt.Sprintf("%s: %s", JobLabel(j), dec), Decision: dec}
}

// Failure is the answer when the decision could not be made (no usable
// snapshot, an engine error, panic or deadline): the job left as
// submitted, or, when refuse is set (on_failure: closed), rejected with a
// message; one error log line either way. gen is the snapshot's generation
// when one was in use.
func Failure(j Job, err error, gen uint64, refuse bool) Result {
	if refuse {
		dec := Decision{Verdict: VerdictRefused, Snapshot: gen, Text: err.Error()}
		return Result{Action: Reject, LogLevel: LogError, Log: fmt.Sprintf("%s: %s", JobLabel(j), dec), Decision: dec,
			ErrMsg: "gangtopo: placement is unavailable (" + err.Error() + "); on_failure is closed, so the job was not submitted: try again later or ask your administrator"}
	}
	dec := Decision{Verdict: VerdictUntouched, Snapshot: gen, Text: err.Error()}
	return Result{LogLevel: LogError, Log: fmt.Sprintf("%s: %s", JobLabel(j), dec), Decision: dec}
}

// JobLabel names a job in log lines: its name quoted (a name cannot forge
// log lines) and its user.
func JobLabel(j Job) string {
	part := ""
	switch {
	case j.HetJob:
		part = fmt.Sprintf(" (hetjob component %d)", j.HetOffset)
	case j.ArrayInx != "":
		part = fmt.Sprintf(" (array %q)", j.ArrayInx)
	}
	return fmt.Sprintf("job %q%s of uid %d", j.Name, part, j.UserID)
}

// JobRequest is what job j asks for in the engine's terms, read as the
// decision reads it, whatever its scope and option: the simulators use it
// to read a rewritten job back.
func (dc *Decider) JobRequest(j Job) (request.Request, error) {
	return dc.buildRequest(j, request.Option{})
}
