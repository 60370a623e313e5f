package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
)

func newQuotaSyncCmd(o *quotaOptions) *cobra.Command {
	sync := &cobra.Command{
		Use:   "sync [--yes] [--adopt]",
		Short: "Make Slurm's QOS and associations match gangtopo.yaml's quota: section (dry run without --yes)",
		Long: "Creates the QOS gangtopo.yaml's quota: section names (each with gangtopo's record in its description),\n" +
			"makes each account's own QOS its default (the default it had is recorded), and takes the borrow and\n" +
			"reclaim QOS away from every association: only the controller puts jobs there. A QOS gangtopo did not\n" +
			"create is refused. Every change is printed before it is made (docs/quota.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQuotaSync(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := sync.Flags()
	f.BoolVar(&o.yes, "yes", false, "run the sacctmgr commands (default: print them)")
	f.BoolVar(&o.adopt, "adopt", false, "take as gangtopo's the existing QOS gangtopo.yaml names that an earlier gangtopo quota sync created before it recorded what it creates")
	f.StringVar(&o.live.config, "config", "", configHelp(configForQuota))
	f.StringVar(&o.live.slurm.binDir, "slurm-bin", "", "`directory` holding sacctmgr and scontrol (default: $PATH)")
	return sync
}

// newQuotaOffCmd has flags of its own (Slurm's, where quota's are the
// ledger's).
func newQuotaOffCmd() *cobra.Command {
	o := &quotaOptions{}
	off := &cobra.Command{
		Use:   "off [--yes]",
		Short: "Put back what quota sync and the controller changed in Slurm (dry run without --yes)",
		Long: "Gives each account back the default QOS its own QOS's record says, moves the waiting jobs out of\n" +
			"gangtopo's QOS (to their association's default), takes out reclaim pins, and removes gangtopo's QOS;\n" +
			"a QOS that jobs still run in stays until they end (run quota off again then). Set quota.enabled: false\n" +
			"in gangtopo.yaml first, so that the controller stops changing the QOS (docs/quota.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQuotaOff(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	off.Flags().BoolVar(&o.yes, "yes", false, "make the changes (default: print them)")
	o.live.register(off.Flags(), false, configForQuota)
	return off
}

// runQuotaSync is `gangtopo quota sync`: the sacctmgr commands that make
// Slurm match the quota: section, printed, or made through the door with
// --yes.
func runQuotaSync(ctx context.Context, w io.Writer, o *quotaOptions) error {
	if err := o.live.loadConfigOnly(); err != nil {
		return err
	}
	cfg := o.live.cfg.Quota
	if !cfg.Enabled {
		return usagef("%s: the quota: section names no shares (quota.enabled is false): nothing to sync", o.live.cfgPath)
	}
	bin := o.live.slurm.binDir
	conf, err := slurmstate.Command(ctx, bin, cfg.Timeout, "scontrol", "show", "config")
	if err != nil {
		return fmt.Errorf("quota sync: reading slurm.conf: %w", err)
	}
	if err := quotaexec.CheckEnforce(conf); err != nil {
		return fmt.Errorf("quota sync: nothing changed: %w", err)
	}
	sm := quotaexec.Sacctmgr{BinDir: bin, Timeout: cfg.Timeout}
	acc, err := sm.Read(ctx)
	if err != nil {
		return fmt.Errorf("quota sync: %w (nothing changed)", err)
	}
	plan, err := quotaexec.SyncPlan(cfg, acc, o.adopt)
	if err != nil {
		return fmt.Errorf("quota sync: nothing changed: %w", err)
	}
	if len(plan) == 0 {
		fmt.Fprintln(w, "Slurm's QOS and associations already match the quota: section")
		return nil
	}
	door := commandDoor(o.live.cfg, bin, "quota sync", w)
	if err := applyChanges(ctx, w, door, plan, "sync", cfg.Timeout, false, o.yes); err != nil || !o.yes {
		return err
	}
	if acc, err = sm.Read(ctx); err != nil {
		return fmt.Errorf("quota sync: reading back: %w", err)
	}
	// the cluster's size is the controller's to check (sync reads no nodes)
	if err := quotaexec.Check(cfg, cfg.Shares.Sum(), acc); err != nil {
		return fmt.Errorf("quota sync: Slurm still disagrees with gangtopo.yaml (run quota sync again, or mend what it says): %w", err)
	}
	return nil
}

// applyChanges prints each sacctmgr change, and with yes makes it
// through the door, stopping at the first that fails.
func applyChanges(ctx context.Context, w io.Writer, door *actuate.Door, cs []quotaexec.Change, action string, timeout time.Duration, undo, yes bool) error {
	for _, c := range cs {
		line := fmt.Sprintf("%s\n      (%s)", c, changeWhat(c))
		if !yes {
			fmt.Fprintf(w, "would run: %s\n", line)
			continue
		}
		fmt.Fprintf(w, "running: %s\n", line)
		if _, err := door.Do(ctx, c.Door(action, "quota", timeout, undo)); err != nil {
			return fmt.Errorf("%s: %w (the changes before it were made; none after it)", c, err)
		}
	}
	return nil
}

func changeWhat(c quotaexec.Change) string {
	if c.Account != "" {
		return "account " + c.Account + ": " + c.What
	}
	return c.What
}

// runQuotaOff is `gangtopo quota off` (quotaexec.PlanOff): printed, or
// made through the door with --yes, accounts first, then the waiting jobs,
// then the QOS, which are removed only if every job left them.
func runQuotaOff(ctx context.Context, w io.Writer, o *quotaOptions) error {
	if err := o.live.loadConfigOnly(); err != nil {
		return err
	}
	cfg := o.live.cfg.Quota
	if cfg.Enabled && o.yes {
		return usagef("%s: quota.enabled is true: the controller would go on changing gangtopo's QOS and moving jobs into them. Set quota.enabled: false there first (the controller then takes out its reclaim pins and changes nothing more), then run gangtopo quota off --yes", o.live.cfgPath)
	}
	acc, err := quotaexec.Sacctmgr{BinDir: o.live.slurm.binDir, Timeout: cfg.Timeout}.Read(ctx)
	if err != nil {
		return fmt.Errorf("quota off: %w (nothing changed)", err)
	}
	st, err := o.live.poll(ctx)
	if err != nil {
		return fmt.Errorf("quota off: %w (nothing changed)", err)
	}
	p := quotaexec.PlanOff(acc, st)
	if p.Empty() {
		fmt.Fprintln(w, "nothing of gangtopo's quotas is left in Slurm: no QOS of gangtopo's, no job in one, no reclaim pin")
		return nil
	}
	if cfg.Enabled {
		fmt.Fprintf(w, "note: quota.enabled is true in %s: set it to false before quota off --yes\n", o.live.cfgPath)
	}
	door := commandDoor(o.live.cfg, o.live.slurm.binDir, "quota off", w)
	if err := applyChanges(ctx, w, door, p.Accounts, "restore", cfg.Timeout, true, o.yes); err != nil {
		return fmt.Errorf("quota off: %w", err)
	}
	if err := offJobs(ctx, w, door, p.Jobs, o.yes); err != nil {
		return fmt.Errorf("quota off: %w; gangtopo's QOS are left in place (a QOS removed under a waiting job holds it): run quota off again", err)
	}
	if err := applyChanges(ctx, w, door, p.Remove, "restore", cfg.Timeout, true, o.yes); err != nil {
		return fmt.Errorf("quota off: %w", err)
	}
	for _, k := range p.Kept {
		fmt.Fprintf(w, "left: %s\n", k)
	}
	return nil
}

// offJobs prints and makes the waiting jobs' changes; every one is tried,
// and the first error returned.
func offJobs(ctx context.Context, w io.Writer, door *actuate.Door, cs []actuate.Change, yes bool) error {
	var first error
	for _, c := range cs {
		line := fmt.Sprintf("%s %s\n      (job %s: %s)", c.Cmd, strings.Join(c.Args, " "), c.Job, c.Reason)
		if !yes {
			fmt.Fprintf(w, "would run: %s\n", line)
			continue
		}
		fmt.Fprintf(w, "running: %s\n", line)
		if _, err := door.Do(ctx, c); err != nil && first == nil {
			first = fmt.Errorf("job %s: %w", c.Job, err)
		}
	}
	return first
}
