package queue

import (
	"fmt"
	"math"

	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/sim/stepcost"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// Job is one trace job as the replay sees it: when it is submitted (in
// seconds of replay time), how long it runs at slowdown 1 and how many
// whole GPUs it needs. Philly jobs have no GPU model, partition or node
// count, so none is modelled: a job asks for G GPUs anywhere.
type Job struct {
	// Name says where the job came from ("philly.csv:1234"), for messages.
	Name     string
	Submit   float64
	Duration float64
	GPUs     int
	// Account is the Slurm account the job runs under (Config.Quota's
	// shares name them); empty when no quota is modelled.
	Account string
	// Limit is the job's own time limit in seconds (a history's --time),
	// what backfill plans with; 0: its run time where placed x
	// Config.LimitFactor. A job still running at its limit ends there.
	Limit float64
	// Nodes, when positive, is the node count the job asked for (-N); 0:
	// Config.OneNodeUpTo decides. Option, when set, is the job's own
	// --gang-topology (a history's), instead of Config.GangAbove's rule.
	Nodes  int
	Option *request.Option
	// Cancel, when positive, is when the job was cancelled (replay
	// seconds): a job still waiting then leaves the queue without
	// running, a running one ends then.
	Cancel float64
}

// Config holds the replay's settings. The zero value is usable: Defaults
// fills every unset field, in one place.
type Config struct {
	// Slowdown is the fixed-factor slowdown model, used when Grounded is
	// nil. Zero value: DefaultSlowdown.
	Slowdown Slowdown
	// Grounded, when set, charges placements with the grounded model
	// (selector/sim/stepcost) at its band instead of Slowdown.
	Grounded *Grounded
	// LimitFactor sets each job's time limit (Slurm's --time, what
	// backfill plans with) to its run time where placed, Duration x
	// slowdown, times LimitFactor. Default 1: exact limits.
	LimitFactor float64
	// GangAbove and GangOption: a job of more than GangAbove GPUs asks for
	// GangOption (--gang-topology), default leaf:preferred above 8 GPUs.
	// Smaller jobs ask for no tier (the engine's default, any:required,
	// still tries one NVLink domain, then one node, first). 0 means the
	// default; a negative GangAbove gives every job the option.
	GangAbove  int
	GangOption request.Option
	// OneNodeUpTo: jobs of at most this many GPUs ask for exactly one node
	// (Slurm's -N 1, what users of stock Slurm usually write for a job that
	// fits a server). 0: no job fixes its node count, the scheduler may
	// split any job (--gpus=G alone).
	OneNodeUpTo int
	// CPUsPerGPU is the CPU request per GPU; default 4, below the CPU/GPU
	// ratio of every node in the example clusters, so CPUs never bind.
	CPUsPerGPU int
	// RendezvousTimeout (seconds) is for naive-pods only: a job whose pods
	// are not all bound this long after its first pod was bound fails and
	// is resubmitted. Default 600 (ten minutes, PyTorch elastic's default
	// rendezvous join timeout).
	RendezvousTimeout float64
	// Defrag, when set, models the controller's defragmentation policy
	// (defrag.go); nil: none.
	Defrag *Defrag
	// Quota, when set, models GPU shares per account: hard limits or
	// gangtopo's dynamic quotas (quota.go); nil: none.
	Quota *Quota
	// Failures, when set, takes nodes down under running jobs and repairs
	// them later (failures.go); nil: no node fails.
	Failures *Failures
	// Timing, when set, runs the scheduler's passes when slurmctld does
	// (timing.go); nil: a pass at every event.
	Timing *Timing
	// Progress, when set, is called now and then with the number of jobs
	// finished (or rejected) and the total.
	Progress func(done, total int)
	// RecordUse keeps the nodes each run held (Outcome.Used,
	// Requeue.Used), what FreeWhole needs; off, a replay of many jobs at
	// many loads and bands keeps less in memory.
	RecordUse bool
}

// Defaults returns the configuration with every unset field at its
// default.
func (c Config) Defaults() Config {
	if c.Slowdown == (Slowdown{}) {
		c.Slowdown = DefaultSlowdown()
	}
	if c.LimitFactor == 0 {
		c.LimitFactor = 1
	}
	if c.GangAbove == 0 {
		c.GangAbove = 8
	}
	if c.GangOption == (request.Option{}) {
		c.GangOption = request.Option{Tier: topology.TierLeaf, Mode: request.Preferred}
	}
	if c.CPUsPerGPU == 0 {
		c.CPUsPerGPU = 4
	}
	if c.RendezvousTimeout == 0 {
		c.RendezvousTimeout = 600
	}
	return c
}

// validate checks a defaulted configuration.
func (c *Config) validate() error {
	if err := c.Slowdown.Validate(); err != nil {
		return err
	}
	if g := c.Grounded; g != nil && (g.Band < 0 || g.Band >= stepcost.NumBands) {
		return fmt.Errorf("grounded slowdown band %d: want low, central or high", g.Band)
	}
	if !(c.LimitFactor > 0) || math.IsInf(c.LimitFactor, 0) {
		return fmt.Errorf("time limit factor %g: want a positive number", c.LimitFactor)
	}
	if c.CPUsPerGPU < 0 || !(c.RendezvousTimeout > 0) {
		return fmt.Errorf("CPUs per GPU and rendezvous timeout must be positive")
	}
	return nil
}

// Request is what job j asks of a policy: its GPUs, CPUsPerGPU per GPU,
// and for gangs above GangAbove GPUs the gang topology option.
func (c *Config) Request(j *Job) request.Request {
	r := request.Request{JobID: j.Name, GPUs: j.GPUs, CPUMilli: int64(j.GPUs) * int64(c.CPUsPerGPU) * 1000}
	switch {
	case j.Option != nil:
		j.Option.Apply(&r)
	case j.GPUs > c.GangAbove:
		c.GangOption.Apply(&r)
	}
	switch {
	case j.Nodes > 0:
		r.Nodes = j.Nodes
	case j.GPUs <= c.OneNodeUpTo:
		r.Nodes = 1
	}
	return r
}

// checkJobs rejects input the replay cannot run: jobs out of submit order,
// negative or non-finite times, jobs without GPUs.
func checkJobs(jobs []Job) error {
	if len(jobs) == 0 {
		return fmt.Errorf("no jobs to replay")
	}
	for i := range jobs {
		j := &jobs[i]
		switch {
		case j.Nodes < 0 || j.Nodes > j.GPUs:
			return fmt.Errorf("%s: %d nodes for %d GPUs (want 0 to the GPU count)", j.Name, j.Nodes, j.GPUs)
		case j.GPUs < 1:
			return fmt.Errorf("%s: %d GPUs (want at least 1)", j.Name, j.GPUs)
		case !(j.Duration >= 0) || math.IsInf(j.Duration, 0):
			return fmt.Errorf("%s: duration %g s (want a finite number >= 0)", j.Name, j.Duration)
		case math.IsNaN(j.Submit) || math.IsInf(j.Submit, 0):
			return fmt.Errorf("%s: submit time %g is not finite", j.Name, j.Submit)
		case !(j.Limit >= 0) || math.IsInf(j.Limit, 0) || !(j.Cancel >= 0) || math.IsInf(j.Cancel, 0):
			return fmt.Errorf("%s: limit %g s, cancel %g s (want finite numbers >= 0)", j.Name, j.Limit, j.Cancel)
		case i > 0 && j.Submit < jobs[i-1].Submit:
			return fmt.Errorf("%s: submitted at %g s, before the previous job (%g s): sort jobs by submit time", j.Name, j.Submit, jobs[i-1].Submit)
		}
	}
	return nil
}

// mostGPUs is the GPU count of the cluster's largest node.
func mostGPUs(c *topology.Cluster) int {
	most := 0
	for i := range c.Nodes {
		most = max(most, c.Nodes[i].NumGPUs())
	}
	return most
}

// mostCPUs is the CPU count of the node with the most CPUs.
func mostCPUs(c *topology.Cluster) int {
	most := 0
	for i := range c.Nodes {
		most = max(most, c.Nodes[i].CPUs)
	}
	return most
}

// minNodes is the fewest servers of at most most GPUs that hold g GPUs.
func minNodes(most, g int) int {
	if most == 0 {
		return 0
	}
	return (g + most - 1) / most
}
