package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
)

func newDefragCmd() *cobra.Command {
	o := placeOptions{}
	var protect string
	cmd := &cobra.Command{
		Use:   "defrag --topology cluster.yaml --state snapshot.json --gpus N --gang-topology TIER",
		Short: "Plan which running jobs to requeue (or move) so a gang that cannot start now fits in one domain",
		Long: `Plan which running jobs to requeue (or move) so a gang that cannot start now fits
in one domain of its tier, evicting as few GPUs as possible. Evicted jobs that
fit elsewhere at once are listed as moves. Nothing is changed: the plan is
printed for an administrator (or a preemption policy) to carry out.

Exit status: 0 a plan was found (or the gang fits already), 1 no plan, 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDefrag(cmd.OutOrStdout(), o, protect)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.topology, "topology", "", "cluster file (YAML, version v1)")
	f.StringVar(&o.state, "state", "", "occupancy snapshot with running jobs (JSON, version v1)")
	f.StringVar(&o.gpus, "gpus", "", "GPUs of the gang: N or MODEL:N")
	f.IntVarP(&o.nodes, "nodes", "N", 0, "exact number of nodes")
	f.IntVar(&o.perNode, "gpus-per-node", 0, "GPUs on each node (with --nodes)")
	f.StringVar(&o.gangTopology, "gang-topology", "leaf", "TIER[,slice=S] the gang must fit in")
	f.StringVar(&protect, "protect", "", "job ids that must not be evicted, comma-separated")
	return cmd
}

func runDefrag(w io.Writer, o placeOptions, protect string) error {
	c, err := loadCluster(o.topology)
	if err != nil {
		return err
	}
	if o.state == "" {
		return usagef("--state is required (the running jobs to plan with)")
	}
	s, err := loadSnapshot(o.state, c)
	if err != nil {
		return err
	}
	r, err := o.request()
	if err != nil {
		return err
	}
	e := place.New(c, place.Options{})
	if res := e.Place(s, r); res.Status == place.Placed {
		fmt.Fprintf(w, "nothing to do: the gang fits now (%s)\n", res.Message)
		return nil
	} else if res.Status != place.NoFit {
		fmt.Fprintf(w, "%s: %s\n", res.Status, res.Message)
		return errNotPlaced
	}
	protected := map[string]bool{}
	for _, id := range request.SplitList(protect) {
		protected[id] = true
	}
	p, ok := defrag.For(e, s, r, defrag.Options{Evictable: func(j int) bool { return !protected[s.Jobs[j].ID] }})
	if !ok {
		fmt.Fprintf(w, "no plan: no %s can hold %s even with every evictable job gone\n", r.EffectiveTier(), r.String())
		return errNotPlaced
	}
	fmt.Fprintf(w, "plan for %s: evict %d job(s) holding %d GPUs in %s %s\n", r.String(), len(p.Evict), p.EvictGPUs,
		c.Domains[p.Domain].Tier, c.Domains[p.Domain].Name)
	for _, j := range p.Evict {
		job := &s.Jobs[j]
		fmt.Fprintf(w, "  evict job %-8s user %-10s %3d GPUs on %s\n", job.ID, job.User, job.Alloc.NumGPUs(),
			hostlist.Compress(place.NodeNames(c, job.Alloc)))
	}
	fmt.Fprintf(w, "then the gang: %s\n", p.Gang.Message)
	for _, m := range p.Moves {
		fmt.Fprintf(w, "  move job %s to %s\n", s.Jobs[m.Job].ID, place.Describe(c, m.Alloc))
	}
	for _, j := range p.Requeued {
		fmt.Fprintf(w, "  requeue job %s (no room elsewhere now)\n", s.Jobs[j].ID)
	}
	return nil
}
