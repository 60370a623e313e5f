package deployed

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/stockslurm"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// ShardsPerGPU is the shard count per GPU of the modelled gres.conf: a
// milli-GPU share is that many shards.
const ShardsPerGPU = 1000

// Config describes the deployment.
type Config struct {
	// Policy is gangtopo.yaml's decision part. Its ShardsPerGPU is set to
	// the package's.
	Policy jobsubmit.Policy
	// Slurm is the stock Slurm being steered. Its NodeFeatures are set to
	// the cluster file's node features plus what `gangtopo gen features`
	// writes.
	Slurm stockslurm.Options
	// Workload is what the engine measures fragmentation against (nil:
	// the engine's default mix, frag.PhillyPrior).
	Workload *frag.Workload
	// LearnEvery, when above 0, learns the mix from the jobs that start
	// (Started), as the controller learns it from the jobs it sees running
	// (frag.Learner), starting from Workload: the engine is rebuilt on the
	// learned mix every LearnEvery jobs.
	LearnEvery int
}

// LearnWindow is how many distinct jobs the learned mix comes from, the
// controller's default.
const LearnWindow = 10000

// Path is the deployed path on one cluster. It serves one simulation run
// and is not safe for concurrent use.
type Path struct {
	dec      *jobsubmit.Decider
	eng      *place.Engine
	slurm    *stockslurm.Model
	features [][]string // by NodeID: what Slurm reports each node carrying
	gen      uint64

	cfg     Config
	c       *topology.Cluster
	learner *frag.Learner // nil: a fixed mix
	learned int           // jobs observed since the engine was built
}

// New makes the deployed path for cluster c.
func New(c *topology.Cluster, cfg Config) (*Path, error) {
	cfg.Policy.ShardsPerGPU = ShardsPerGPU
	dec, err := jobsubmit.New(cfg.Policy, c)
	if err != nil {
		return nil, err
	}
	features, err := slurmFeatures(c, cfg.Policy.FeaturePrefix)
	if err != nil {
		return nil, err
	}
	cfg.Slurm.NodeFeatures = features
	p := &Path{dec: dec, eng: place.New(c, cfg.Policy.EngineOptions(cfg.Workload)),
		slurm: stockslurm.New(c, cfg.Slurm), features: features, cfg: cfg, c: c}
	if cfg.LearnEvery > 0 {
		p.learner = frag.NewLearner(LearnWindow)
	}
	return p, nil
}

// Started tells the path that the job of r started, for the learned mix.
// r.Models should be what the job's decision recorded
// (jobsubmit.Decision.Models), which is all the controller learns of them.
func (p *Path) Started(r *request.Request) {
	if p.learner == nil || !p.learner.Observe(r.JobID, p.observe(r)) {
		return
	}
	if p.learned++; p.learned < p.cfg.LearnEvery {
		return
	}
	p.learned = 0
	prior := frag.PhillyPrior(1)
	if p.cfg.Workload != nil {
		prior = *p.cfg.Workload
	}
	if w, ok, err := p.learner.Workload(LearnCoverage, prior); ok && err == nil {
		p.eng = place.New(p.c, p.cfg.Policy.EngineOptions(&w))
	}
}

// LearnCoverage is the share of the single-node jobs whose shapes the
// learned mix keeps (FGD's 95%).
const LearnCoverage = 0.95

// observe is the learner's view of a job: its per-node shape, models and
// node count.
func (p *Path) observe(r *request.Request) frag.Observation {
	nodes := max(r.Nodes, 1)
	if r.GPUsPerNode > 0 {
		nodes = r.GPUs / r.GPUsPerNode
	}
	o := frag.Observation{Nodes: nodes, Tier: r.Tier}
	o.Node = frag.NodeShape{GPUs: r.GPUs / nodes, CPUMilli: r.CPUMilli / int64(nodes)}
	if r.GPUs > 0 {
		o.Node.Milli = r.Share()
		for _, m := range r.Models {
			if id, ok := p.c.ModelByName(m); ok {
				o.Node.Models = o.Node.Models.With(id)
			}
		}
	}
	return o
}

// slurmFeatures is, by NodeID, every feature a node carries in slurm.conf:
// its own from the cluster file, the ones gangtopo binds to, and its GPU
// models (prefix + model, which a constraint may name).
func slurmFeatures(c *topology.Cluster, prefix string) ([][]string, error) {
	bound, err := jobsubmit.NodeFeatures(c, prefix)
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		fs := append(append([]string(nil), n.Features...), bound[i]...)
		for _, m := range c.ModelNames(n.Models) {
			fs = append(fs, prefix+m)
		}
		out[i] = fs
	}
	return out, nil
}

// Submit is the plugin's decision about job j on the state s of now, as
// slurmctld would get it: the snapshot reports the nodes' features.
func (p *Path) Submit(s *occupancy.Snapshot, j jobsubmit.Job) (jobsubmit.Result, error) {
	p.gen++
	return p.dec.Decide(j, p.withFeatures(s), p.gen, p.eng)
}

// Rebind is the controller's answer about pending job j (as Slurm holds
// it, with gangtopo's decision d) on the state s of now:
// jobsubmit.Decider.Rebind with the path's engine, on s reporting the
// nodes' features as the controller's snapshots do.
func (p *Path) Rebind(s *occupancy.Snapshot, j jobsubmit.Job, d jobsubmit.Decision) jobsubmit.Rebinding {
	p.gen++
	return p.dec.Rebind(j, d, p.withFeatures(s), p.eng, p.gen)
}

// Restart is the controller's answer about job j requeued after a node
// failure (as Slurm holds it, with gangtopo's decision d), which ran on
// the nodes ran, on the state s of now: jobsubmit.Decider.Restart.
func (p *Path) Restart(s *occupancy.Snapshot, j jobsubmit.Job, d jobsubmit.Decision, ran []string) jobsubmit.Restarting {
	p.gen++
	return p.dec.Restart(j, d, ran, p.withFeatures(s), p.eng, p.gen)
}

// Start is where Slurm would start job j (as rewritten) on the state s of
// now; false when it stays pending. exact, when set, replaces the CPUs and
// memory Slurm charges (whole CPUs, MiB per GPU) with the trace's own, so
// that every policy of a simulation is charged the same.
func (p *Path) Start(s *occupancy.Snapshot, j jobsubmit.Job, exact *Resources) (occupancy.Allocation, bool, error) {
	sj, err := p.SlurmJob(j)
	if err != nil {
		return occupancy.Allocation{}, false, err
	}
	if exact != nil {
		sj.CPUMilli, sj.MemMiB = exact.CPUMilli, exact.MemMiB
	}
	return p.slurm.PlaceJob(s, &sj)
}

// Resources are a job's CPU and memory totals.
type Resources struct {
	CPUMilli int64
	MemMiB   int64
}

// SlurmJob is job j as stock Slurm schedules it: its GRES, node counts,
// CPUs and memory read the way the plugin reads them
// (jobsubmit.Decider.JobRequest), its constraint as written.
func (p *Path) SlurmJob(j jobsubmit.Job) (stockslurm.Job, error) {
	r, err := p.dec.JobRequest(j)
	if err != nil {
		return stockslurm.Job{}, fmt.Errorf("deployed: job %q: %w", j.Name, err)
	}
	sj, err := stockslurm.FromRequest(&r, false)
	if err != nil {
		return stockslurm.Job{}, err
	}
	sj.Constraint = j.Features
	return sj, nil
}

// withFeatures is s reporting the nodes' features, as the controller's
// snapshots do. The copy shares s's arrays: it must not outlive the call
// that made it.
func (p *Path) withFeatures(s *occupancy.Snapshot) *occupancy.Snapshot {
	c := *s
	c.Features = p.features
	return &c
}
