package ctld

import (
	"fmt"
	"time"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Gate runs the decision of selector/jobsubmit inside slurmctld for one
// configuration generation of the plugin (init to fini): it owns what the
// pure decision cannot, the snapshot file and its holds (Store), the
// engine's deadline, and the answer on failure (on_failure).
type Gate struct {
	cfg     Config
	decider *jobsubmit.Decider
	store   *Store
	engine  engineSlot
	// mixVersion is the store's mix the engine measures against, and
	// workload that mix (nil: the default).
	mixVersion uint64
	workload   *frag.Workload
	started    bool
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
	g, err := NewWithCluster(cfg, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Topology, err)
	}
	return g, nil
}

// NewWithCluster makes a gate for an already-built cluster (tests,
// benchmarks).
func NewWithCluster(cfg Config, c *topology.Cluster) (*Gate, error) {
	d, err := jobsubmit.New(cfg.Policy, c)
	if err != nil {
		return nil, err
	}
	return &Gate{cfg: cfg, decider: d, store: NewStore(cfg, c), engine: engineSlot{e: place.New(c, cfg.EngineOptions(nil))}}, nil
}

func loadTopology(cfg Config) (*topology.Cluster, error) {
	f, _, err := openChecked("topology", cfg.Topology, trustedUIDs(cfg))
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
func (g *Gate) Cluster() *topology.Cluster { return g.decider.Cluster() }

// Submit decides about one job. It never panics and never blocks on I/O;
// the engine runs under cfg.Deadline.
//
// Stages 1-2 (scope, request) and 5 (rewrite) are jobsubmit's; here the
// snapshot is taken from the store (3), the engine runs in a goroutine
// under the deadline (4), and the placed gang's GPUs are held until a
// snapshot shows them. A failure in 3 or 4 follows on_failure.
func (g *Gate) Submit(j jobsubmit.Job, now time.Time) (res jobsubmit.Result) {
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
	p := g.decider.Prepare(j)
	if p.Done {
		return p.Final
	}
	return g.place(j, p, now)
}

// failure answers as on_failure says.
func (g *Gate) failure(j jobsubmit.Job, err error, gen uint64) jobsubmit.Result {
	return jobsubmit.Failure(j, err, gen, g.cfg.OnFailure == FailClosed)
}

// Modify answers a user's update of a job's features or excluded nodes
// (job_modify): gangtopo's binding of the job, as the controller published
// it with the snapshot, is kept (jobsubmit.KeepBinding). Without a snapshot
// the update passes as given, with a line saying so.
func (g *Gate) Modify(m jobsubmit.Modification) (res jobsubmit.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = jobsubmit.Result{LogLevel: jobsubmit.LogError, Log: fmt.Sprintf("update of job %s: internal error, passes as given: %v", m.JobID, r)}
		}
	}()
	s := g.store.Current()
	if s == nil {
		return jobsubmit.Result{LogLevel: jobsubmit.LogError, Log: fmt.Sprintf("update of job %s by uid %d passes as given: no snapshot loaded, so its binding is not known", m.JobID, m.UserID)}
	}
	return jobsubmit.KeepBinding(m, s)
}
