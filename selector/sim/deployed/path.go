package deployed

import (
	"fmt"

	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/place"
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
	// the engine's default mix, as the plugin has it today).
	Workload *frag.Workload
}

// Path is the deployed path on one cluster. It serves one simulation run
// and is not safe for concurrent use.
type Path struct {
	dec      *jobsubmit.Decider
	eng      *place.Engine
	slurm    *stockslurm.Model
	features [][]string // by NodeID: what Slurm reports each node carrying
	gen      uint64
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
	return &Path{dec: dec, eng: place.New(c, cfg.Policy.EngineOptions(cfg.Workload)),
		slurm: stockslurm.New(c, cfg.Slurm), features: features}, nil
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
