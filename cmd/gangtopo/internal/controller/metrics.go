package controller

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
	"github.com/gangtopo/gangtopo/selector/occupancy"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// metrics are the controller's Prometheus series. GPU amounts are in GPUs
// (milli-GPUs / 1000).
type metrics struct {
	pollErrors      *prometheus.CounterVec
	pollDuration    prometheus.Histogram
	commandDuration *prometheus.HistogramVec
	generation      prometheus.Gauge
	published       prometheus.Gauge
	mismatch        *prometheus.GaugeVec
	nodes           *prometheus.GaugeVec
	jobs            prometheus.Gauge
	jobsAge         prometheus.Gauge

	gpus      *prometheus.GaugeVec
	frag      *prometheus.GaugeVec
	fragRate  prometheus.Gauge
	stranded  prometheus.Gauge
	largest   *prometheus.GaugeVec
	startable *prometheus.GaugeVec
	leafWhole *prometheus.GaugeVec
	leafFree  *prometheus.GaugeVec
	degraded  *prometheus.GaugeVec
	healthy   *prometheus.GaugeVec
	decisions *prometheus.GaugeVec
	mixJobs   prometheus.Gauge
}

// Stages a poll can fail in: a Slurm source, the topology file, building the
// snapshot, or publishing it.
var stages = []string{"sinfo", "squeue", "scontrol_nodes", "scontrol_jobs", "topology", "build", "publish"}

func newMetrics(reg prometheus.Registerer, age func() float64) *metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	m := &metrics{
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gangtopo_poll_errors_total",
			Help: "Polls that failed, by stage: a Slurm command (failed, timed out or printed something unexpected), topology, build or publish. The last good snapshot stays."}, []string{"stage"}),
		pollDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gangtopo_poll_duration_seconds",
			Help: "Wall time of one poll: Slurm commands, building and publishing the snapshot.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 15)}),
		commandDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gangtopo_slurm_command_duration_seconds",
			Help: "Wall time of each Slurm command (or saved-output read).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 15)}, []string{"command"}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_snapshot_generation", Help: "Generation of the last published snapshot."}),
		published:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_snapshot_timestamp_seconds", Help: "Unix time the last published snapshot describes."}),
		jobs:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_jobs", Help: "Jobs holding resources in the last snapshot."}),
		jobsAge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_job_listing_age_seconds",
			Help: "How long before the last snapshot's poll its job listing started: 0 while each poll waits for its own, more where a slow squeue runs beside the polls."}),
		fragRate: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_fragmentation_rate_percent", Help: "FGD fragmentation rate: node-level fragmentation / idle GPU capacity."}),
		stranded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_stranded_gpus", Help: "Idle GPU capacity no typical single-node shape can use where it is."}),
		mixJobs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gangtopo_mix_jobs",
			Help: "Distinct jobs the published request mix was learned from (0: not enough yet; the plugin and the gauges use the default mix)."}),
	}
	reg.MustRegister(m.pollErrors, m.pollDuration, m.commandDuration, m.generation, m.published, m.jobs, m.jobsAge, m.fragRate, m.stranded, m.mixJobs)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gangtopo_snapshot_age_seconds",
		Help: "Seconds since the time the last published snapshot describes (since daemon start before the first)."}, age))
	m.mismatch = gauge("gangtopo_slurm_mismatch_nodes", "Nodes on which Slurm and the topology (or two Slurm outputs) disagreed in the last poll, by kind.", "kind")
	m.nodes = gauge("gangtopo_nodes", "Topology nodes by state in the last snapshot.", "state")
	m.gpus = gauge("gangtopo_gpus", "GPU capacity by state: allocated, idle (free on usable nodes), offline (free on drained/down/unknown nodes).", "state")
	m.frag = gauge("gangtopo_fragmentation_gpus", "Expected idle GPU capacity the typical workload cannot use: tier node is FGD's node-level amount; leaf/block/spine the gang part at that tier.", "tier")
	m.largest = gauge("gangtopo_largest_free_block_gpus", "Whole free GPUs in the freest domain of each tier.", "tier")
	m.startable = gauge("gangtopo_gangs_startable", "Gangs of each typical size that could start now (within one node up to a node's size, else within one leaf); model \"\" is any model.", "gpus", "model")
	m.leafWhole = gauge("gangtopo_leaf_free_whole_nodes", "Usable nodes with every GPU free, per leaf.", "leaf")
	m.leafFree = gauge("gangtopo_leaf_free_gpus", "Whole free GPUs on usable nodes, per leaf.", "leaf")
	m.degraded = gauge("gangtopo_degraded_domains", "Domains with failed members (nodes down, drained or not reported), by tier (block, leaf, spine).", "tier")
	m.healthy = gauge("gangtopo_degraded_domain_healthy_nodes", "Healthy nodes of each degraded domain (one series per domain with a failed member; compare with the domain's size in the cluster file).", "tier", "domain")
	m.decisions = gauge("gangtopo_decisions", "Jobs Slurm lists (pending, running, recently finished) by the gangtopo decision in their AdminComment: verdict, and for untouched jobs the cause (not_covered: partition or nodes missing from the cluster file).", "verdict", "cause")
	for _, st := range stages {
		m.pollErrors.WithLabelValues(st) // export zeros, so rate() works from the start
	}
	return m
}

// observeRuns records the Slurm command durations of a poll.
func (m *metrics) observeRuns(runs []slurmstate.Run) {
	for _, r := range runs {
		m.commandDuration.WithLabelValues(r.Source.Label()).Observe(r.Duration.Seconds())
	}
}

// observeSnapshot sets the gauges that describe a published snapshot.
func (m *metrics) observeSnapshot(s *occupancy.Snapshot, rep *slurmstate.Report) {
	m.generation.Set(float64(s.Generation))
	m.published.Set(float64(s.Time.UnixNano()) / 1e9)
	m.jobs.Set(float64(len(s.Jobs)))
	for _, k := range slurmstate.ProblemKinds() {
		m.mismatch.WithLabelValues(k.Label()).Set(float64(rep.Count(k)))
	}
	var counts [occupancy.StateDown + 1]int
	for _, st := range s.State {
		counts[st]++
	}
	for st, n := range counts {
		m.nodes.WithLabelValues(occupancy.NodeState(st).String()).Set(float64(n))
	}
}

// observeDecisions sets the decision counts of the last poll.
func (m *metrics) observeDecisions(d slurmstate.Decisions) {
	m.decisions.Reset()
	for k, n := range d {
		m.decisions.WithLabelValues(string(k.Verdict), string(k.Cause)).Set(float64(n))
	}
}

// observeFrag sets the fragmentation gauges from the engine's frag package.
func (m *metrics) observeFrag(meter *frag.Meter, s *occupancy.Snapshot) {
	r := meter.BuildReport(s)
	m.gpus.WithLabelValues("allocated").Set(float64(r.AllocatedMilli) / 1000)
	m.gpus.WithLabelValues("idle").Set(float64(r.IdleMilli) / 1000)
	m.gpus.WithLabelValues("offline").Set(float64(r.OfflineMilli) / 1000)
	m.frag.WithLabelValues(topology.TierNode.String()).Set(r.FragMilli / 1000)
	c := meter.Cluster
	for _, t := range topology.Tiers() {
		if !meter.HasGangs(t) {
			continue
		}
		total := 0.0
		for _, d := range c.ByTier[t] {
			total += meter.Gangs(t, meter.Stats(s, d))
		}
		m.frag.WithLabelValues(t.String()).Set(total / 1000)
	}
	m.fragRate.Set(r.FragRate)
	m.stranded.Set(r.StrandedMilli / 1000)
	for _, b := range r.Largest {
		m.largest.WithLabelValues(b.Tier.String()).Set(float64(b.GPUs))
	}
	for _, st := range r.Startable {
		m.startable.WithLabelValues(strconv.Itoa(st.GPUs), st.Model).Set(float64(st.Count))
	}
	for _, l := range r.Leaves {
		m.leafWhole.WithLabelValues(l.Name).Set(float64(l.WholeFreeNodes))
		m.leafFree.WithLabelValues(l.Name).Set(float64(l.FreeGPUs))
	}
	m.observeDegraded(c, r.Degraded)
}

// observeDegraded sets the degraded domains' series: a count per tier
// (zero included), and the healthy nodes of each degraded domain (the
// series of a repaired one dropped).
func (m *metrics) observeDegraded(c *topology.Cluster, ds []frag.Degraded) {
	m.healthy.Reset()
	var count [topology.NumTiers]int
	for _, d := range ds {
		count[d.Tier]++
		m.healthy.WithLabelValues(d.Tier.String(), d.Domain).Set(float64(d.Healthy))
	}
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		if c.HasTier(t) {
			m.degraded.WithLabelValues(t.String()).Set(float64(count[t]))
		}
	}
}

// resetTopologySeries drops series labelled by the old topology's domains.
func (m *metrics) resetTopologySeries() {
	for _, v := range []*prometheus.GaugeVec{m.frag, m.largest, m.startable, m.leafWhole, m.leafFree, m.degraded, m.healthy} {
		v.Reset()
	}
}
