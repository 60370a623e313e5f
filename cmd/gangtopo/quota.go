package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/quotaexec"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/frag"
)

type quotaOptions struct {
	live   defragLive
	output string
	yes    bool
	adopt  bool
}

func newQuotaCmd() *cobra.Command {
	o := quotaOptions{}
	cmd := &cobra.Command{
		Use:   "quota [--config gangtopo.yaml] [-o table|json]",
		Short: "Show each account's GPU share: guaranteed, in use, borrowed, lent, waiting, fragmentation charge",
		Long: "Reads gangtopo.yaml's quota: section and Slurm (sinfo, squeue --json, or their saved outputs) and\n" +
			"prints the quota ledger the controller works from (docs/quota.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQuota(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", outputHelp("table", "json"))
	o.live.register(f, true, configForQuota)
	cmd.AddCommand(newQuotaSyncCmd(&o), newQuotaOffCmd())
	return cmd
}

// quotaReport is `gangtopo quota -o json`.
type quotaReport struct {
	GPUs       int           `json:"gpus"`
	FragWeight float64       `json:"frag_weight"`
	Pool       int           `json:"pool"`
	Borrowed   int           `json:"borrowed"`
	Outside    int           `json:"outside"`
	Accounts   []quotaLine   `json:"accounts"`
	Unreadable []string      `json:"unreadable,omitempty"`
	Moves      []quotaMoveJS `json:"moves,omitempty"`
}

type quotaLine struct {
	Account     string  `json:"account"`
	Guaranteed  int     `json:"guaranteed"`
	Cap         int     `json:"cap,omitempty"`
	InUse       int     `json:"in_use"`
	Borrowed    int     `json:"borrowed"`
	Lent        int     `json:"lent"`
	Waiting     int     `json:"waiting"`
	Frag        float64 `json:"frag"`
	Charge      float64 `json:"charge"`
	Lending     bool    `json:"lending"`
	Preemptible int     `json:"preemptible"`
	// CannotBorrow: GPUs of waiting jobs beyond the share that Slurm may
	// not requeue (they never borrow).
	CannotBorrow int `json:"cannot_borrow"`
}

type quotaMoveJS struct {
	Job  string `json:"job"`
	From string `json:"from"`
	To   string `json:"to"`
}

func runQuota(ctx context.Context, w io.Writer, o quotaOptions) error {
	if err := checkOutput(o.output, "table", "json"); err != nil {
		return err
	}
	if err := o.live.load(true); err != nil {
		return err
	}
	if !o.live.cfg.Quota.Enabled {
		return usagef("%s: the quota: section names no shares (quota.enabled is false): nothing to show", o.live.cfgPath)
	}
	st, err := o.live.poll(ctx)
	if err != nil {
		return err
	}
	s, _, err := slurmstate.BuildSnapshot(o.live.cluster, st, o.live.now(), o.live.cfg.FeaturePrefix)
	if err != nil {
		return err
	}
	wl := frag.PhillyPrior(1)
	obs := quotaexec.Observe(s, st, frag.NewMeter(o.live.cluster, &wl))
	c := quotaexec.Plan(o.live.cfg.Quota, obs.GPUs, obs.Run, obs.Wait, obs.Frag)
	r := newQuotaReport(&c, obs.Unreadable)
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeQuotaTable(w, &r)
	return nil
}

func newQuotaReport(c *quotaexec.Cycle, unreadable []string) quotaReport {
	l := &c.Ledger
	r := quotaReport{GPUs: l.GPUs, FragWeight: l.FragWeight, Pool: l.Pool, Borrowed: l.Borrowed, Outside: l.Outside, Unreadable: unreadable}
	for _, u := range l.Accounts {
		r.Accounts = append(r.Accounts, quotaLine{Account: u.Account, Guaranteed: u.Guaranteed, Cap: u.Cap, InUse: u.InUse,
			Borrowed: u.Borrowed, Lent: u.Lent, Waiting: u.Waiting, Frag: u.Frag, Charge: u.Charge, Lending: u.Lending, Preemptible: u.Preemptible,
			CannotBorrow: c.CannotBorrow[u.Account]})
	}
	for _, m := range c.Moves {
		r.Moves = append(r.Moves, quotaMoveJS{Job: m.Job.Target, From: m.From, To: m.To})
	}
	return r
}

func writeQuotaTable(w io.Writer, r *quotaReport) {
	fmt.Fprintf(w, "cluster: %d GPUs; lendable pool %d, borrowed %d, held outside the shares %d; fragmentation weight %g\n\n",
		r.GPUs, r.Pool, r.Borrowed, r.Outside, r.FragWeight)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ACCOUNT\tGUARANTEED\tCAP\tIN USE\tBORROWED\tLENT\tWAITING\tNO-BORROW\tFRAG\tCHARGE\tLENDING\t")
	for _, a := range r.Accounts {
		cp := "-"
		if a.Cap > 0 {
			cp = fmt.Sprint(a.Cap)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%s\t\n", a.Account, a.Guaranteed, cp, a.InUse, a.Borrowed,
			a.Lent, a.Waiting, a.CannotBorrow, a.Frag, a.Charge, yesNo(a.Lending))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nNO-BORROW: GPUs of waiting jobs beyond the share that Slurm may not requeue (salloc, srun, --no-requeue):")
	fmt.Fprintln(w, "preempting them would cancel them, so they never borrow and wait for the account's own share; so do those whose")
	fmt.Fprintln(w, "GPUs x time limit exceed quota.borrow_max_gpu_hours (a reclaim of them could lose more than that).")
	fmt.Fprintln(w, "FRAG: free GPUs stranded on nodes the account's jobs broke; CHARGE = FRAG x weight, counted against the share.")
	for _, m := range r.Moves {
		fmt.Fprintf(w, "the controller would move job %s from QOS %s to %s\n", m.Job, m.From, m.To)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "not counted (GPUs unreadable): %s\n", u)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
