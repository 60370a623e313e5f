package jobsubmit

import (
	"fmt"
	"strings"

	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

// The jobs gangtopo does not place, and what it says about them.
//
// A job without GPUs is no business of gangtopo's, and passes silently. A
// GPU job that is out of scope (a partition outside gangtopo.yaml's
// partitions, or no option under jobs: gang) passes with a debug line, or,
// when the user gave --gang-topology explicitly, with an info line, a note
// sbatch prints and the decision in the job, because the user asked for
// something that will not happen. A job in scope that gangtopo cannot
// translate (unsupported) or that names partitions or nodes the cluster file
// lacks (not covered) is left as submitted with the decision in the job, so
// `gangtopo why` names the reason and the controller can count jobs the
// cluster file misses. A default from $GANGTOPO_TOPOLOGY never gets a note:
// the user did not ask for this job in particular.

// jobPartition is the partition Slurm will run the job in: the one it
// names, else slurmctld's default partition.
func jobPartition(j Job) string {
	if strings.TrimSpace(j.Partition) != "" {
		return j.Partition
	}
	return j.DefaultPartition
}

// partitionWords names the job's partition for messages.
func partitionWords(j Job) string {
	switch {
	case strings.TrimSpace(j.Partition) != "":
		return fmt.Sprintf("partition %q", j.Partition)
	case j.DefaultPartition != "":
		return fmt.Sprintf("partition %q (Slurm's default)", j.DefaultPartition)
	}
	return "no partition (Slurm's default is not known)"
}

// optionName names where the job's option came from, for messages.
func optionName(j Job) string {
	if j.GangTopologyFromEnv {
		return "$GANGTOPO_TOPOLOGY"
	}
	return "--gang-topology"
}

// explicit says the user gave --gang-topology on this job.
func explicit(j Job) bool { return j.GangTopology != "" && !j.GangTopologyFromEnv }

// asksGPUs says whether the job asks for at least one GPU, or a GPU share
// (gres/shard). A TRES string that does not parse counts as asking:
// buildRequest then says what is wrong with it.
func asksGPUs(j Job) bool {
	for _, s := range []string{j.TresPerJob, j.TresPerNode, j.TresPerSocket, j.TresPerTask} {
		t, ok, err := parseGPUTres(s)
		if err != nil || ok && t.Count != 0 {
			return true
		}
	}
	return hasShards(j)
}

// cpuJob says the job is a CPU job: no GRES at all, or only GPU entries
// that count 0 (--gpus=0). A job with other GRES only (a NIC) is neither:
// gangtopo knows nothing of them, and leaves it alone.
func cpuJob(j Job) bool {
	for _, s := range []string{j.TresPerJob, j.TresPerNode, j.TresPerSocket, j.TresPerTask} {
		for _, item := range strings.Split(s, ",") {
			if strings.TrimSpace(item) == "" {
				continue
			}
			t, ok, err := parseGPUTres(item)
			if err != nil || !ok || t.Count != 0 {
				return false
			}
		}
	}
	return true
}

// outOfScope is the answer for a job scope passed over.
func (dc *Decider) outOfScope(j Job) Result {
	if !asksGPUs(j) {
		if j.GangTopology == "" {
			return Result{}
		}
		return Result{LogLevel: LogDebug, Log: fmt.Sprintf("%s: not placed: no GPUs, so the $GANGTOPO_TOPOLOGY default does not apply", JobLabel(j))}
	}
	why := "no --gang-topology (jobs: gang)"
	if !dc.partitionInScope(jobPartition(j)) {
		why = fmt.Sprintf("%s is not in gangtopo.yaml's partitions (%s)", partitionWords(j), strings.Join(dc.policy.Partitions, ", "))
	}
	if !explicit(j) {
		return Result{LogLevel: LogDebug, Log: fmt.Sprintf("%s: not placed: %s", JobLabel(j), why)}
	}
	req := ""
	if o, err := request.ParseOption(j.GangTopology); err == nil {
		req = o.String()
	}
	return dc.untouched(j, req, 0, CauseOutOfScope, why)
}

// leftAsSubmitted is the answer for a job in scope that gangtopo does not
// translate, or whose partition or nodes the cluster file lacks.
func (dc *Decider) leftAsSubmitted(j Job, o request.Option, gpus int, cause Cause, err error) Result {
	return dc.untouched(j, o.String(), gpus, cause, err.Error())
}

// untouched leaves the job's scheduling as submitted, records why in the
// decision field and logs it; an explicit --gang-topology gets a note for
// the user.
func (dc *Decider) untouched(j Job, req string, gpus int, cause Cause, why string) Result {
	d := Decision{Verdict: VerdictUntouched, Cause: cause, Request: req, GPUs: gpus, Text: why + "; Slurm places the job as submitted"}
	out := Result{Action: Modify}
	if explicit(j) {
		opt := "--gang-topology"
		if req != "" {
			opt += "=" + req
		}
		out.ErrMsg = fmt.Sprintf("gangtopo: %s is not applied: %s; the job is queued as submitted", opt, why)
	}
	return dc.withDecision(j, out, d)
}

// advisoryNote says, for a placement on nodes with several NVLink islands
// (NVLink-bridged pairs in a PCIe box), that the islands are advice there:
// the rewrite can hold a job to one node (-N 1) or to a domain, but which
// GPUs of a node the job gets is Slurm's choice (lowest free indices, Links=
// in gres.conf), and no job field Slurm 22.05 honours names GPU indices.
// On NVSwitch nodes the node is one island, so nothing is lost.
func (dc *Decider) advisoryNote(req request.Request, res place.Result) string {
	if req.EffectiveTier() != topology.TierNVLink && req.Slice <= 1 {
		return ""
	}
	c := dc.cluster
	for _, na := range res.Alloc.Nodes {
		if len(c.Nodes[na.Node].Islands) > 1 {
			return fmt.Sprintf(" (advisory on %s: it has %d NVLink islands, and which of its GPUs the job gets is Slurm's choice)",
				c.Nodes[na.Node].Name, len(c.Nodes[na.Node].Islands))
		}
	}
	return ""
}
