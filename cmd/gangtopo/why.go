package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
	"github.com/gangtopo/gangtopo/selector/topology"
)

type whyOptions struct {
	jobFile, topology, state string
	live                     defragLive
}

func newWhyCmd() *cobra.Command {
	o := whyOptions{}
	cmd := &cobra.Command{
		Use:   "why JOBID",
		Short: "Explain what gangtopo decided for a job, and why it runs where it runs or still waits",
		Long: `Explain what gangtopo decided for a job, and why it runs where it runs or still waits.

It reads the job with "squeue --json --jobs=JOBID --states=all" (or from
--job-file), finds the decision line the job_submit plugin wrote into its AdminComment
(or Comment), and explains it next to what Slurm says. With --topology it
also names the domain the job's nodes span; with --topology and --state, for
a pending job, it asks the engine whether the gang would fit now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWhy(cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.jobFile, "job-file", "", jobFileHelp)
	f.StringVar(&o.topology, "topology", "", "cluster file, to name the domain the job spans")
	f.StringVar(&o.state, "state", "", "occupancy snapshot, to ask the engine whether a pending gang fits now")
	o.live.register(f, false, configForWhy)
	return cmd
}

const jobFileHelp = `read the job from this file ("-": standard input) instead of asking Slurm: saved "squeue --json" output, or saved "scontrol show job" text (with or without -o)`

// slurmJob is what why and unbind read of a job (why_read.go).
type slurmJob struct {
	id, state, reason, nodes       string
	features, prefer, comment, adm string
	excluded                       string // ExcNodeList
}

func runWhy(w io.Writer, id string, o whyOptions) error {
	j, err := readWhyJob(id, o.jobFile)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "job %s: %s\n", j.id, j.stateLine())
	d, err := jobsubmit.ParseDecision(j.adm)
	if err != nil {
		d, err = jobsubmit.ParseDecision(j.comment)
	}
	if err != nil {
		fmt.Fprintln(w, "gangtopo: no decision recorded: the job asks for no GPUs, or is outside gangtopo.yaml's scope without an explicit --gang-topology (jobs: gang and no option, or a partition outside partitions:), or gangtopo could not decide (see slurmctld's log), or it was submitted without the gangtopo job_submit plugin")
		return nil
	}
	printDecision(w, d, j)
	if j.state == "PENDING" && (o.jobFile == "" || o.live.slurm.files[slurmstate.SqueueJSON] != "") {
		o.whyDefrag(w, id)
	}
	if o.topology == "" {
		return nil
	}
	c, err := loadCluster(o.topology)
	if err != nil {
		return err
	}
	if j.nodes != "" {
		fmt.Fprintf(w, "  spans:     %s\n", spanOf(c, j.nodes))
	}
	if j.state == "PENDING" && o.state != "" {
		return whyNow(w, c, o.state, d)
	}
	return nil
}

// slurmReasons translates the pending reasons a gang meets most.
var slurmReasons = map[string]string{
	"Resources": "waiting for resources: no allowed domain has room yet",
	// 26.05's reason for the same wait where topology/tree places the job
	"Insufficient_resources_in_topology_unit": "waiting for resources: no allowed domain has room yet",
	"Priority":       "other jobs are ahead of it in the queue",
	"BadConstraints": "no node matches the job's constraints",
	"None":           "not looked at by the scheduler yet",
}

func (j slurmJob) stateLine() string {
	switch {
	case j.state == "RUNNING" || j.state == "COMPLETING":
		return fmt.Sprintf("%s on %s", j.state, j.nodes)
	case j.state == "PENDING":
		if r, ok := slurmReasons[j.reason]; ok {
			return fmt.Sprintf("PENDING (%s: %s)", j.reason, r)
		}
		return fmt.Sprintf("PENDING (%s)", j.reason)
	}
	return j.state
}

func printDecision(w io.Writer, d jobsubmit.Decision, j slurmJob) {
	head := map[jobsubmit.Verdict]string{
		jobsubmit.VerdictPlaced:    "placed in " + d.Domain + " (tier " + d.Tier + ")",
		jobsubmit.VerdictWider:     "placed wider than asked, in " + d.Domain + " (tier " + d.Tier + "): the preferred tier had no room",
		jobsubmit.VerdictWaiting:   "no domain of the requested tier had room at submit; the job is bound to those that can hold it",
		jobsubmit.VerdictUntouched: "left the job as submitted (gangtopo could not decide; Slurm places it alone)",
		jobsubmit.VerdictRefused:   "refused the job",
	}[d.Verdict]
	if d.Verdict == jobsubmit.VerdictUntouched && d.Cause != "" {
		head = "left the job as submitted (" + causeWords[d.Cause] + "; Slurm places it alone)"
	}
	fmt.Fprintf(w, "gangtopo: %s\n", head)
	switch {
	case d.Request != "" && d.GPUs > 0:
		fmt.Fprintf(w, "  request:   --gang-topology=%s, %d GPUs\n", d.Request, d.GPUs)
	case d.Request != "":
		fmt.Fprintf(w, "  request:   --gang-topology=%s\n", d.Request)
	}
	if d.Shape != "" {
		fmt.Fprintf(w, "  shape:     %s (nodes x GPUs per node)\n", d.Shape)
	}
	if d.Segment > 0 {
		fmt.Fprintf(w, "  segment:   %d (Slurm's --segment: every %d nodes of the job in one block)\n", d.Segment, d.Segment)
	}
	if len(d.Bound) > 0 {
		how, expr := "required", j.features
		if expr == "" || !strings.Contains(expr, "[") && !strings.Contains(expr, jobsubmit.DefaultFeaturePrefix) {
			how, expr = "preferred", j.prefer
		}
		fmt.Fprintf(w, "  bound to:  %s (%s, %s)\n", strings.Join(d.Bound, ", "), how, expr)
	}
	if d.Text != "" {
		fmt.Fprintf(w, "  why:       %s\n", d.Text)
	}
	if d.Snapshot > 0 {
		fmt.Fprintf(w, "  snapshot:  generation %d\n", d.Snapshot)
	}
}

// causeWords says why a job was left as submitted.
var causeWords = map[jobsubmit.Cause]string{
	jobsubmit.CauseNotCovered:  "the cluster file does not cover its partition or nodes",
	jobsubmit.CauseUnsupported: "gangtopo does not translate its request",
	jobsubmit.CauseOutOfScope:  "its partition is outside gangtopo.yaml's partitions",
	jobsubmit.CauseSlurmLimit:  "gangtopo's binding or decision would not fit Slurm's 1024-byte Features or Comment",
}

// spanOf names the tightest domain holding the job's nodes.
func spanOf(c *topology.Cluster, nodes string) string {
	names, err := hostlist.Expand(nodes)
	if err != nil || len(names) == 0 {
		return "unknown (" + nodes + ")"
	}
	if len(names) == 1 {
		return "one node, " + names[0]
	}
	for _, t := range []topology.Tier{topology.TierBlock, topology.TierLeaf, topology.TierSpine} {
		var dom topology.DomainID = topology.NoDomain
		same := true
		for _, n := range names {
			id, ok := c.NodeByName(n)
			if !ok {
				return "unknown: node " + n + " is not in " + c.Name
			}
			up := c.Nodes[id].Up[t]
			if dom == topology.NoDomain {
				dom = up
			}
			same = same && up != topology.NoDomain && up == dom
		}
		if same {
			return fmt.Sprintf("%s %s (%d nodes)", t, c.Domains[dom].Name, len(names))
		}
	}
	return fmt.Sprintf("the whole cluster (%d nodes over several spines)", len(names))
}

// whyNow asks the engine whether the pending gang would fit the snapshot.
func whyNow(w io.Writer, c *topology.Cluster, statePath string, d jobsubmit.Decision) error {
	s, err := loadSnapshot(statePath, c)
	if err != nil {
		return err
	}
	o, err := request.ParseOption(d.Request)
	if err != nil || d.GPUs == 0 {
		return nil // nothing to re-run
	}
	r := request.Request{GPUs: d.GPUs}
	o.Apply(&r)
	res := place.New(c, place.Options{}).Place(s, r)
	if res.Status == place.Placed {
		fmt.Fprintf(w, "  now:       it would fit (%s); Slurm starts it at its next scheduling pass\n", res.Message)
		return nil
	}
	fmt.Fprintf(w, "  now:       still no room: %s\n", res.Message)
	return nil
}

// whyDefrag says whether a defragmentation plan could start the pending
// gang, and what it costs, from Slurm's state now (or its saved outputs).
// A failure to plan is a line of the answer, not an error of why.
func (o *whyOptions) whyDefrag(w io.Writer, id string) {
	l := &o.live
	l.topology = o.topology
	if err := l.load(false); err != nil {
		if o.topology == "" && l.config == "" {
			return // no cluster file known: nothing to plan on, and nothing was asked
		}
		fmt.Fprintf(w, "  defrag:    no plan shown (%v)\n", err)
		return
	}
	v, err := l.observe(context.Background())
	if err != nil {
		fmt.Fprintf(w, "  defrag:    no plan shown (reading Slurm: %v)\n", err)
		return
	}
	p, err := l.planner()
	if err != nil {
		fmt.Fprintf(w, "  defrag:    no plan shown (%v)\n", err)
		return
	}
	var b strings.Builder
	l.writePendingPlans(&b, v, p, id)
	line := strings.TrimSpace(b.String())
	if _, rest, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(line, "job ") {
		line = rest
	}
	fmt.Fprintf(w, "  defrag:    %s\n", line)
}
