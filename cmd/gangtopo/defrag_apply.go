package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/selector/topology"
)

type applyOptions struct {
	live      defragLive
	job, plan string
	yes       bool
	wait      string
	// command names the command in propose's messages: "defrag apply",
	// or "defrag" (defrag --job, which only plans); "" reads as the first
	command string
	// view is the cluster propose planned on
	view *defragrun.View
}

// name is the command propose speaks for.
func (o *applyOptions) name() string {
	if o.command == "" {
		return "defrag apply"
	}
	return o.command
}

func newDefragApplyCmd() *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply (--job ID | --plan FILE) [--yes] [--wait DURATION]",
		Short: "Carry a defragmentation plan out through Slurm: hold the room, requeue what the plan names",
		Long: `Carry a defragmentation plan out through Slurm, for a pending gang: --job ID plans
on the cluster as it is now; --plan FILE carries out a plan saved by
"gangtopo defrag --job ID --save FILE", refused if the cluster changed since.

Without --yes it is a dry run: the plan is printed, nothing is changed.
With --yes: a Slurm reservation holds the nodes the plan frees for the gang
(nothing else can start there), the gang is attached to it, the cluster is
read again and the plan checked, and the jobs both plans name are requeued,
each change recorded in the audit log (actions.audit_log) before it is made.
Only jobs Slurm may requeue, in gangtopo.yaml's defrag: partitions/QOS/accounts,
within its rate limit, lost-work budget and requeue window, for a gang that
waits for a reason a requeue can fix (Resources, Priority, ReqNodeNotAvail,
NodeDown). Then it waits for the gang to start and ends the hold: --wait,
counted from when the hold was made, at most (and by default) defrag.hold
minus a margin (30 s), so the wait ends before the reservation does; --wait 0
leaves the hold to the controller daemon. Interrupted (SIGINT, SIGTERM), it
stops, ends the hold and says what was requeued; a second interrupt ends it
at once. Should nothing end the hold, its own end leaves the gang alone
(flags FLEX, NO_HOLD_JOBS_AFTER_END). See docs/defrag.md.

Exit status: 0 done (or a dry run with a plan, or nothing to do), 1 no plan,
a stale plan, a limit, a gang no requeue can start, a failure in Slurm, an
interrupt, or a gang that did not start in time, 2 bad input (an unknown or
running job, a gang that can never fit, a plan from another cluster, --job
with --plan, a --wait longer than the hold).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "the pending gang to make room for (a job ID)")
	f.StringVar(&o.plan, "plan", "", "a plan saved by gangtopo defrag --save")
	f.BoolVar(&o.yes, "yes", false, "act: without it nothing is changed")
	f.StringVar(&o.wait, "wait", "", "how long after the hold is made to wait for the gang to start before ending the hold (default and most: defrag.hold minus 30 s; 0: leave the hold to the controller)")
	o.live.register(f, true, configForDefrag)
	return cmd
}

func (o *applyOptions) run(ctx context.Context, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the first interrupt ends the hold; a second one ends gangtopo as Go does by default
	}()
	switch {
	case o.job != "" && o.plan != "":
		return usagef("defrag apply: --job and --plan together: give one (--job plans now, --plan carries out a saved plan)")
	case o.job == "" && o.plan == "":
		return usagef("defrag apply: say which gang: --job ID, or --plan FILE")
	}
	l := &o.live
	if err := l.load(true); err != nil {
		return err
	}
	wait, err := o.waitFor(l.cfg.Defrag.Hold)
	if err != nil {
		return err
	}
	var pf *defragrun.PlanFile
	if o.plan != "" {
		if pf, err = o.loadPlan(l.cluster); err != nil {
			return err
		}
		o.job = pf.Gang
	}
	if o.yes {
		if err := l.audit().CheckWritable(); err != nil {
			return usagef("defrag apply: every change is recorded before it is made, and %v; nothing was changed", err)
		}
	}
	slurm := defragrun.Clients{BinDir: l.slurm.binDir, Timeout: l.cfg.Defrag.Timeout}
	pr, p, err := o.propose(ctx, slurm.Job, pf)
	if err != nil || pr == nil {
		return err
	}
	if pr.FitsNow {
		fmt.Fprintf(w, "nothing to requeue: job %s fits in %s now (on %s); Slurm starts it at its next scheduling pass\n", o.job, pr.Domain, pr.GangNode)
		return nil
	}
	l.writeProposal(w, pr, p)
	if pr.Limit != nil {
		return fmt.Errorf("defrag apply: refused by the %v; nothing was changed", pr.Limit)
	}
	if !o.yes {
		fmt.Fprintln(w, "dry run: nothing was changed; give --yes to carry it out")
		return nil
	}
	return o.carry(ctx, w, slurm, p, pr, wait)
}

// waitFor reads --wait: at most, and by default, the hold less its
// margin, so that the wait ends before the reservation does.
func (o *applyOptions) waitFor(hold time.Duration) (time.Duration, error) {
	most := hold - defragrun.HoldMargin(hold)
	if o.wait == "" {
		return most, nil
	}
	d, err := time.ParseDuration(o.wait)
	if o.wait == "0" {
		d, err = 0, nil
	}
	switch {
	case err != nil || d < 0:
		return 0, usagef("defrag apply: --wait %q: want a duration (e.g. 5m), or 0 to leave the hold to the controller", o.wait)
	case d > most:
		return 0, usagef("defrag apply: --wait %s: longer than defrag.hold (%s) minus %s, so the hold would run out first: give at most %s (or raise defrag.hold)",
			d, hold, defragrun.HoldMargin(hold), most)
	}
	return d, nil
}

// loadPlan reads --plan and checks it is this cluster's.
func (o *applyOptions) loadPlan(c *topology.Cluster) (*defragrun.PlanFile, error) {
	pf, err := defragrun.LoadPlan(o.plan)
	if err != nil {
		return nil, usagef("defrag apply: --plan: %v", err)
	}
	if err := pf.CheckCluster(c); err != nil {
		return nil, usagef("defrag apply: --plan %s: %v", o.plan, err)
	}
	if _, ok := c.DomainByName(pf.Domain); !ok {
		return nil, usagef("defrag apply: --plan %s: domain %s is not in cluster %s", o.plan, pf.Domain, c.Name)
	}
	return &pf, nil
}

// jobStateFunc says a job's state and reason as scontrol would (known
// false: no such job): defragrun.Slurm's Job, or saved outputs.
type jobStateFunc func(ctx context.Context, id string) (state, reason string, known bool, err error)

// propose checks the gang and plans for it on the cluster as it is now;
// with a saved plan, the plan made now must be the saved one.
func (o *applyOptions) propose(ctx context.Context, jobState jobStateFunc, pf *defragrun.PlanFile) (*defragrun.Proposal, *defragrun.Planner, error) {
	l := &o.live
	state, reason, known, err := jobState(ctx, o.job)
	switch {
	case err != nil:
		return nil, nil, err
	case !known:
		return nil, nil, usagef("%s: job %s: Slurm knows no such job", o.name(), o.job)
	case state != "PENDING":
		return nil, nil, usagef("%s: job %s is %s: %s makes room for a pending gang", o.name(), o.job, state, o.name())
	}
	v, err := l.observe(ctx)
	if err != nil {
		return nil, nil, err
	}
	o.view = v
	pj, ok := v.PendingByID(o.job)
	if !ok {
		return nil, nil, usagef("%s: job %s has no gangtopo decision in its AdminComment: defragmentation plans for gangs the plugin decided about", o.name(), o.job)
	}
	p, err := l.planner()
	if err != nil {
		return nil, nil, err
	}
	g, err := p.Gang(pj)
	var bad *defragrun.BadInput
	if errors.As(err, &bad) {
		return nil, nil, usagef("%s: %v", o.name(), err)
	}
	if !defragrun.Fixable(reason) {
		return nil, nil, fmt.Errorf("defrag apply: no plan for job %s: %s; nothing was changed", o.job, unfixable(reason))
	}
	var only []topology.DomainID
	if pf != nil {
		d, _ := l.cluster.DomainByName(pf.Domain) // checked by loadPlan
		only = []topology.DomainID{d}
	}
	pr, found := p.Propose(v, g, only)
	if !found {
		if pf != nil {
			return nil, nil, fmt.Errorf("defrag apply: the saved plan is stale: %s; nothing was changed", noPlan(pr, l.cfgPath))
		}
		return nil, nil, fmt.Errorf("%s: %s", o.name(), noPlan(pr, l.cfgPath))
	}
	if pf != nil && !pr.FitsNow {
		if diffs := pf.Differences(pr); len(diffs) > 0 {
			return nil, nil, fmt.Errorf("defrag apply: the saved plan is stale (made %s): %s; nothing was changed: plan again (gangtopo defrag --job %s --save FILE, or defrag apply --job %s)",
				pf.Made.Format(time.RFC3339), strings.Join(diffs, "; "), o.job, o.job)
		}
	}
	return pr, p, nil
}

// carry holds the room, re-checks, requeues, and waits for the gang, every
// change through the command's door (audited first).
func (o *applyOptions) carry(ctx context.Context, w io.Writer, slurm defragrun.Reader, p *defragrun.Planner, pr *defragrun.Proposal, wait time.Duration) error {
	l := &o.live
	say := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	x := &defragrun.Executor{Door: commandDoor(l.cfg, l.slurm.binDir, "defrag apply", w), Slurm: slurm, Audit: l.audit(),
		Cfg: l.cfg.Defrag, Now: time.Now, Logf: say, Alarmf: func(format string, args ...any) { say("WARNING: "+format, args...) }}
	domain := []topology.DomainID{pr.Plan.Domain}
	recheck := func(ctx context.Context) (*defragrun.Proposal, bool, error) {
		v, err := l.observe(ctx)
		if err != nil {
			return nil, false, err
		}
		pr2, ok := p.Propose(v, pr.Gang, domain)
		return pr2, ok, nil
	}
	gang := pr.Gang.Job.ID
	out, err := x.Carry(ctx, pr, recheck)
	if err != nil {
		return fmt.Errorf("defrag apply: %w", err)
	}
	say("requeued %d job(s); reservation %s holds %s for job %s until %s", len(out.Requeued), out.Hold, pr.GangNode, gang,
		out.Made.Add(l.cfg.Defrag.Hold).Format(time.RFC3339))
	if wait == 0 {
		say("not waiting (--wait 0): the controller daemon ends the hold once job %s runs; without one, the hold runs out by itself and leaves the gang alone", gang)
		return nil
	}
	deadline := out.Made.Add(wait)
	say("waiting until %s (--wait %s from the hold) for job %s to start", deadline.Format(time.RFC3339), wait, gang)
	if err := x.Release(ctx, gang, out.Hold, deadline); err != nil {
		return fmt.Errorf("defrag apply: %w", err)
	}
	say("job %s runs; the hold is ended", gang)
	return nil
}
