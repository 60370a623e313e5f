package gate

import (
	"errors"
	"fmt"
	"os"
	"time"

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

// Result is the gate's answer about one job. For Modify, every non-nil
// field replaces the job's ("" clears it); MinNodes/MaxNodes when > 0.
type Result struct {
	Action   Action
	LogLevel LogLevel
	Log      string
	ErrMsg   string // Reject: shown to the user

	Features, Prefer, ReqNodes, ExcNodes *string
	TresPerJob, TresPerNode              *string
	MinNodes, MaxNodes                   uint32
	Comment, AdminComment                *string

	Decision Decision // what was decided (zero for jobs out of scope)
}

// Gate turns a submitted job into a rewrite. One Gate serves one
// configuration generation of the plugin (init to fini).
type Gate struct {
	cfg     Config
	cluster *topology.Cluster
	store   *Store
	engine  engineSlot
	started bool
	// lastEngine is the engine's own time in the last call, for the log
	// line (the rest of "took" is translation, the snapshot and cgo).
	lastEngine time.Duration
}

// New loads the topology named by cfg (refusing an untrusted file) and
// makes a gate. The snapshot is loaded by Start.
func New(cfg Config) (*Gate, error) {
	c, err := loadTopology(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := NodeFeatures(c, cfg.FeaturePrefix); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Topology, err)
	}
	return NewWithCluster(cfg, c), nil
}

// NewWithCluster makes a gate for an already-built cluster (tests,
// benchmarks).
func NewWithCluster(cfg Config, c *topology.Cluster) *Gate {
	return &Gate{cfg: cfg, cluster: c, store: NewStore(cfg, c), engine: engineSlot{e: place.New(c, place.Options{})}}
}

func loadTopology(cfg Config) (*topology.Cluster, error) {
	f, err := os.Open(cfg.Topology)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", cfg.Topology, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkTrusted(cfg.Topology, fi, trustedUIDs(cfg)); err != nil {
		return nil, err
	}
	return topology.Parse(f, cfg.Topology)
}

// Start loads the snapshot once (its failure is kept for the calls to
// report) and keeps reloading it in the background.
func (g *Gate) Start(logf func(string)) {
	if msg := g.store.Refresh(); msg != "" && logf != nil {
		logf(msg)
	}
	g.started = true
	go g.store.Run(logf)
}

// Stop ends the background reload.
func (g *Gate) Stop() { g.store.Stop(g.started) }

// Store gives tests and benchmarks access to the snapshot store.
func (g *Gate) Store() *Store { return g.store }

// Config returns the gate's configuration.
func (g *Gate) Config() Config { return g.cfg }

// Cluster returns the topology the gate places on.
func (g *Gate) Cluster() *topology.Cluster { return g.cluster }

// Submit decides about one job. It never panics and never blocks on I/O;
// the engine runs under cfg.Deadline.
//
// Stages: (1) scope: jobs without GPUs, outside the configured partitions,
// or (with jobs: gang) without --gang-topology pass untouched and
// silently; (2) the job's option and GPU request become a
// request.Request, and user mistakes (bad option, a tier the cluster lacks,
// inconsistent sizes) are refused with a message; (3) the snapshot is
// taken from the store; (4) the engine places the gang; (5) the placement
// becomes a rewrite (rewrite.go). A failure in (3) or (4) follows
// on_failure.
func (g *Gate) Submit(j Job, now time.Time) (res Result) {
	t0 := time.Now()
	g.lastEngine = 0
	defer func() {
		if r := recover(); r != nil {
			res = g.failure(j, fmt.Errorf("internal error: %v", r), 0)
		}
		if res.Log != "" {
			res.Log += fmt.Sprintf(" (took %dus, engine %dus)", time.Since(t0).Microseconds(), g.lastEngine.Microseconds())
		}
	}()
	submitHook(j)
	opt, inScope, err := g.scope(j)
	if err != nil {
		return g.refuse(j, "", err.Error())
	}
	if !inScope {
		return Result{}
	}
	req, err := buildRequest(j, opt)
	var unsupported *unsupportedError
	switch {
	case errors.As(err, &unsupported):
		return Result{LogLevel: LogInfo, Log: fmt.Sprintf("%s: left as submitted: %v", jobLabel(j), err)}
	case err != nil:
		return g.refuse(j, opt.String(), err.Error())
	}
	if err := g.covered(req); err != nil {
		return Result{LogLevel: LogInfo, Log: fmt.Sprintf("%s: left as submitted: %v", jobLabel(j), err)}
	}
	if msg := g.checkRequest(req, opt); msg != "" {
		return g.refuse(j, opt.String(), msg)
	}
	return g.place(j, req, opt, now)
}

// scope reads the job's --gang-topology and says whether gangtopo handles
// the job at all.
func (g *Gate) scope(j Job) (request.Option, bool, error) {
	hasGPU := j.TresPerJob+j.TresPerNode+j.TresPerSocket+j.TresPerTask != ""
	if !hasGPU {
		if j.GangTopology != "" {
			return request.Option{}, false, errors.New("--gang-topology needs GPUs: add --gpus=N (or --gpus-per-node=N)")
		}
		return request.Option{}, false, nil
	}
	if !g.partitionInScope(j.Partition) {
		return request.Option{}, false, nil
	}
	if j.GangTopology == "" {
		return g.cfg.Default, g.cfg.Jobs == ScopeGPU, nil
	}
	o, err := request.ParseOption(j.GangTopology)
	if err != nil {
		return o, false, fmt.Errorf("--gang-topology: %v", err)
	}
	return o, true, nil
}

func (g *Gate) partitionInScope(p string) bool {
	if len(g.cfg.Partitions) == 0 {
		return true
	}
	for _, want := range g.cfg.Partitions {
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
func (g *Gate) checkRequest(r request.Request, o request.Option) string {
	if err := r.Validate(); err != nil {
		return err.Error()
	}
	c := g.cluster
	if t := r.EffectiveTier(); !c.HasTier(t) {
		return fmt.Sprintf("--gang-topology=%s: cluster %s has no %s domains (its tiers: %s)", o, c.Name, t, tierList(c))
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
func (g *Gate) covered(r request.Request) error {
	c := g.cluster
	for _, p := range r.Partitions {
		if _, ok := c.PartitionByName(p); !ok {
			return &unsupportedError{fmt.Sprintf("partition %q (not in topology %s)", p, c.Name)}
		}
	}
	for _, n := range append(append([]string(nil), r.Allowed...), r.Excluded...) {
		if _, ok := c.NodeByName(n); !ok {
			return &unsupportedError{fmt.Sprintf("node %q (not in topology %s)", n, c.Name)}
		}
	}
	return nil
}

// refuse rejects the job with a message for the user.
func (g *Gate) refuse(j Job, req, msg string) Result {
	d := Decision{Verdict: VerdictRefused, Request: req, Text: msg}
	return Result{Action: Reject, ErrMsg: "gangtopo: " + msg, LogLevel: LogInfo,
		Log: fmt.Sprintf("%s: %s", jobLabel(j), d), Decision: d}
}

// failure handles an internal failure (no usable snapshot, engine error,
// panic or deadline) as configured: leave the job as submitted, or refuse
// it.
func (g *Gate) failure(j Job, err error, gen uint64) Result {
	if g.cfg.OnFailure == FailClosed {
		d := Decision{Verdict: VerdictRefused, Snapshot: gen, Text: err.Error()}
		return Result{Action: Reject, LogLevel: LogError, Log: fmt.Sprintf("%s: %s", jobLabel(j), d), Decision: d,
			ErrMsg: "gangtopo: placement is unavailable (" + err.Error() + "); on_failure is closed, so the job was not submitted: try again later or ask your administrator"}
	}
	d := Decision{Verdict: VerdictUntouched, Snapshot: gen, Text: err.Error()}
	return Result{LogLevel: LogError, Log: fmt.Sprintf("%s: %s", jobLabel(j), d), Decision: d}
}

func jobLabel(j Job) string {
	return fmt.Sprintf("job %q of uid %d", j.Name, j.UserID)
}
