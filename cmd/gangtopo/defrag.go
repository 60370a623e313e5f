package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/selector/defrag"
	"github.com/gangtopo/gangtopo/selector/hostlist"
	"github.com/gangtopo/gangtopo/selector/place"
	"github.com/gangtopo/gangtopo/selector/request"
)

type defragOptions struct {
	place     placeOptions
	protect   string
	job, save string
	jobFile   string
	svg       string
	width     int
	live      defragLive
}

func newDefragCmd() *cobra.Command {
	o := &defragOptions{}
	cmd := &cobra.Command{
		Use:   "defrag (--job ID [--save FILE] | --topology cluster.yaml --state snapshot.json --gpus N --gang-topology TIER)",
		Short: "Plan which running jobs to requeue (or move) so a gang that cannot start now fits in one domain",
		Long: `Plan which running jobs to requeue (or move) so a gang that cannot start now fits
in one domain of its tier, at the least cost. Nothing is changed: the plan is
printed ("gangtopo defrag apply" carries one out).

With --job ID the plan is for that pending gang, on the cluster as Slurm has it
now (sinfo and squeue --json), under gangtopo.yaml's defrag: section (what may
be requeued, what it costs); --save FILE writes it for "defrag apply --plan".
Otherwise it plans offline, on a snapshot file, for a request given by flags,
evicting as few GPUs as possible; evicted jobs that fit elsewhere at once are
listed as moves.

Exit status: 0 a plan was found (or the gang fits already), 1 no plan, 2 bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.job != "" || o.save != "" || o.jobFile != "" {
				return o.runLive(cmd.Context(), cmd.OutOrStdout(), cmd)
			}
			return runDefrag(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.place.topology, "topology", "", "cluster file (YAML, version v1; with --job: default gangtopo.yaml's)")
	f.StringVar(&o.place.state, "state", "", "occupancy snapshot with running jobs (JSON, version v1)")
	f.StringVar(&o.place.gpus, "gpus", "", "GPUs of the gang: N or MODEL:N")
	f.IntVarP(&o.place.nodes, "nodes", "N", 0, "exact number of nodes")
	f.IntVar(&o.place.perNode, "gpus-per-node", 0, "GPUs on each node (with --nodes)")
	f.StringVar(&o.place.gangTopology, "gang-topology", defaultGangTopology, gangTopologyHelp)
	f.StringVar(&o.protect, "protect", "", "job ids that must not be evicted, comma-separated")
	f.StringVar(&o.job, "job", "", "plan for this pending gang, on Slurm's state now")
	f.StringVar(&o.save, "save", "", "with --job: write the plan to this file, for gangtopo defrag apply --plan")
	f.StringVar(&o.svg, "svg", "", "also draw the cluster before and after the plan into this `file` (SVG)")
	f.IntVar(&o.width, "width", 0, "width of the before and after pictures in columns (default: $COLUMNS or 100)")
	f.StringVar(&o.jobFile, "job-file", "", "with --job: "+jobFileHelp+"; with saved outputs of sinfo and squeue --json nothing asks Slurm")
	o.live.register(f, false, configForDefrag)
	cmd.AddCommand(newDefragApplyCmd())
	return cmd
}

// runLive plans for a pending gang on Slurm's state now.
func (o *defragOptions) runLive(ctx context.Context, w io.Writer, cmd *cobra.Command) error {
	if o.job == "" {
		return usagef("defrag: --save and --job-file need --job (a plan is for one pending gang)")
	}
	for _, name := range []string{"state", "gpus", "nodes", "gpus-per-node", "gang-topology", "protect"} {
		if cmd.Flags().Changed(name) {
			return usagef("defrag: --%s plans offline; with --job the gang and the cluster come from Slurm", name)
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l := &o.live
	l.topology = o.place.topology
	if err := l.load(false); err != nil {
		return err
	}
	a := applyOptions{live: *l, job: o.job, command: "defrag"}
	state := defragrun.Clients{BinDir: l.slurm.binDir, Timeout: l.cfg.Defrag.Timeout}.Job
	if o.jobFile != "" || l.slurm.saved() {
		// planned on saved outputs: the job's state comes from them too,
		// and nothing asks Slurm
		state = o.savedJobState
	}
	if err := o.checkPictures(); err != nil {
		return err
	}
	pr, p, err := a.propose(ctx, state, nil)
	if err != nil {
		return err
	}
	if pr.FitsNow {
		fmt.Fprintf(w, "nothing to requeue: job %s fits in %s now (on %s)\n", o.job, pr.Domain, pr.GangNode)
		return nil
	}
	l.writeProposal(w, pr, p)
	if err := writePlanPictures(w, l.cluster, a.view.Snapshot, pr.Plan, o.svg, pictureWidth(o.width)); err != nil {
		return err
	}
	if pr.Limit != nil {
		fmt.Fprintf(w, "the limits refuse it now: %v\n", pr.Limit)
	}
	if o.save == "" {
		return nil
	}
	err = defragrun.SavePlan(o.save, defragrun.NewPlanFile(pr, l.cluster, l.now()))
	if errors.Is(err, defragrun.ErrNoDir) {
		return usagef("defrag: --save %s: %v", o.save, err)
	}
	if err != nil {
		return fmt.Errorf("defrag: --save %s: %w", o.save, err)
	}
	fmt.Fprintf(w, "plan saved to %s: carry it out with gangtopo defrag apply --plan %s --yes\n", o.save, o.save)
	return nil
}

// savedJobState is scontrol's word on the job from --job-file, else from
// the saved squeue --json output.
func (o *defragOptions) savedJobState(ctx context.Context, id string) (string, string, bool, error) {
	if o.jobFile != "" {
		j, err := readWhyJob(id, o.jobFile)
		if err != nil {
			return "", "", false, err
		}
		return j.state, j.reason, true, nil
	}
	st, err := o.live.poll(ctx)
	if err != nil {
		return "", "", false, err
	}
	for _, j := range st.Queued {
		if j.ID == id || j.TaskID == id {
			return "PENDING", j.Reason, true, nil
		}
	}
	for _, j := range st.Jobs {
		if j.ID == id {
			return j.State, "", true, nil
		}
	}
	return "", "", false, nil
}

func runDefrag(w io.Writer, do *defragOptions) error {
	o, protect := do.place, do.protect
	if err := do.checkPictures(); err != nil {
		return err
	}
	c, err := loadCluster(o.topology)
	if err != nil {
		return err
	}
	if o.state == "" {
		return usagef("--state is required (the running jobs to plan with), or --job ID to plan on Slurm's state now")
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
	return writePlanPictures(w, c, s, p, do.svg, pictureWidth(do.width))
}

// checkPictures checks --svg and --width before any work.
func (o *defragOptions) checkPictures() error {
	if o.width < 0 || o.width > 0 && o.width < minPictureWidth {
		return usagef("--width %d: want at least %d columns (0: $COLUMNS, else 100)", o.width, minPictureWidth)
	}
	return checkWritable("--svg", o.svg)
}
