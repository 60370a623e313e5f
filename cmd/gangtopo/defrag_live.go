package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/defragrun"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/topology"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// defragLive is what the commands that plan on the cluster as it is now
// share (`defrag --job`, `defrag apply`, `why`, `frag --pending`): the
// plugin's gangtopo.yaml (its policy reads the gang's request, its
// defrag: section says what may be taken), the cluster file, and how to
// read Slurm.
type defragLive struct {
	config, topology string
	at               string // --now
	slurm            slurmFlags
	cfg              ctld.Config
	cfgPath          string // the file read, "" for the defaults
	cluster          *topology.Cluster
	now              func() time.Time
	// uses says what the command reads in gangtopo.yaml, for its help and
	// for the message when there is none
	uses string
}

// Why each command reads gangtopo.yaml (defragLive.uses).
const (
	configForDefrag = "its defrag: section says what may be requeued"
	configForWhy    = "its policy reads the job's request as the plugin did; its defrag: section says what a plan may requeue"
	configForFrag   = "with --pending: its defrag: section says what a plan may requeue"
	configForQuota  = "its quota: section holds the accounts' shares"
)

// configHelp is the --config flag's help for a command that reads uses.
func configHelp(uses string) string {
	return "the plugin's gangtopo.yaml (" + uses + "; default: $GANGTOPO_CONFIG, else " + ctld.DefaultConfigPath + ")"
}

func (l *defragLive) register(fs *pflag.FlagSet, withTopology bool, uses string) {
	l.uses = uses
	fs.StringVar(&l.config, "config", "", configHelp(uses))
	if withTopology {
		fs.StringVar(&l.topology, "topology", "", "cluster file (default: gangtopo.yaml's topology)")
	}
	fs.StringVar(&l.at, "now", "", "plan as of this `time` (RFC 3339; with saved outputs of Slurm's commands): what a job has run is counted to it")
	l.slurm.register(fs)
}

// load reads gangtopo.yaml and the cluster file. Without a gangtopo.yaml
// (none given and none at the default path) and !needConfig, the defaults
// stand in: nothing may be requeued then, and plans say so.
func (l *defragLive) load(needConfig bool) error {
	if l.now == nil {
		l.now = time.Now
	}
	if l.at != "" {
		at, err := time.Parse(time.RFC3339, l.at)
		if err != nil {
			return usagef("--now %q: want an RFC 3339 time, e.g. 2026-12-03T18:00:00Z", l.at)
		}
		l.now = func() time.Time { return at }
	}
	path, explicit := l.config, l.config != ""
	if !explicit {
		path = ctld.DefaultConfigPath
		if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
			path, explicit = env, true
		}
	}
	cfg, err := ctld.LoadConfig(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && !explicit && !needConfig:
		l.cfg = ctld.Defaults()
	case err != nil && errors.Is(err, fs.ErrNotExist) && !explicit:
		return usagef("no gangtopo.yaml at %s: give --config (%s)", path, l.uses)
	case err != nil:
		return usagef("--config: %v", err)
	default:
		l.cfg, l.cfgPath = cfg, path
	}
	return l.loadCluster()
}

// loadConfigOnly reads gangtopo.yaml, which must exist (no cluster file).
func (l *defragLive) loadConfigOnly() error {
	path := l.config
	if path == "" {
		path = ctld.DefaultConfigPath
		if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
			path = env
		}
	}
	cfg, err := ctld.LoadConfig(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist) && l.config == "":
		return usagef("no gangtopo.yaml at %s: give --config (%s)", path, l.uses)
	case err != nil:
		return usagef("--config: %v", err)
	}
	l.cfg, l.cfgPath = cfg, path
	return nil
}

// loadCluster reads the cluster file (--topology, else gangtopo.yaml's).
func (l *defragLive) loadCluster() error {
	var err error
	topo := l.topology
	if topo == "" {
		topo = l.cfg.Topology
	}
	if topo == "" {
		return usagef("--topology is required (no gangtopo.yaml names one)")
	}
	l.cluster, err = loadCluster(topo)
	return err
}

// observe reads Slurm now.
func (l *defragLive) observe(ctx context.Context) (*defragrun.View, error) {
	st, err := l.poll(ctx)
	if err != nil {
		return nil, err
	}
	return defragrun.FromState(st, l.cluster, l.cfg.FeaturePrefix, l.now())
}

// poll reads Slurm (squeue --json: jobs with their facts) now.
func (l *defragLive) poll(ctx context.Context) (*slurmstate.State, error) {
	cfg, err := l.slurm.config()
	if err != nil {
		return nil, err
	}
	if cfg.JobsFrom != slurmstate.SqueueJSON {
		return nil, usagef("--jobs-from: defragmentation and quotas read jobs from squeue --json (their requeue flag, account, QOS, start and priority)")
	}
	st, _, err := slurmstate.Poll(ctx, cfg)
	var pe *slurmstate.PollError
	if errors.As(err, &pe) && pe.Input {
		return nil, asUsage(err)
	}
	return st, err
}

// audit is the configured audit log (actions.audit_log).
func (l *defragLive) audit() actuate.Audit { return actuate.Audit{Path: l.cfg.Actions.AuditLog} }

// planner makes a planner with the history of the audit log (an
// unreadable log is an error: the limits could not be checked).
func (l *defragLive) planner() (*defragrun.Planner, error) {
	h, _, _, err := defragrun.ReadHistory(l.audit(), l.now(), l.cfg.Defrag.Limits.Keep())
	if err != nil {
		return nil, err
	}
	return defragrun.NewPlanner(l.cfg, l.cluster, h)
}

// writeProposal prints a plan for a gang: what is requeued, where the gang
// goes, how the room is held, what the limits say.
func (l *defragLive) writeProposal(w io.Writer, pr *defragrun.Proposal, p *defragrun.Planner) {
	g := pr.Gang
	fmt.Fprintf(w, "plan for job %s (%d GPUs, %s) in %s %s: requeue %d job(s) holding %d GPUs, cost %.2f, %.2f GPU-hours lost\n",
		g.Job.ID, g.Request.GPUs, g.Request.EffectiveTier(), g.Request.EffectiveTier(), pr.Domain,
		len(pr.Victims), pr.Plan.EvictGPUs, pr.Plan.Cost, pr.Lost)
	for _, v := range pr.Victims {
		fmt.Fprintf(w, "  requeue job %-8s user %-10s %3d GPUs on %-12s ran %5.1f h  lost %6.2f GPU-h  cost %6.2f\n",
			v.ID, v.User, v.GPUs, v.Nodes, v.Ran.Hours(), v.Lost, v.Cost)
	}
	fmt.Fprintf(w, "  then the gang: %s\n", pr.GangNode)
	fmt.Fprintf(w, "  held for it by: reservation %s on %s for at most %s (user %s)\n",
		defragrun.HoldName(g.Job.ID), pr.GangNode, l.cfg.Defrag.Hold, orUID(g.Job.User, g.Job.Job.UserID))
	hour, spent := p.History.Spent(l.now(), l.cfg.Defrag.Limits)
	fmt.Fprintf(w, "limits: %d requeue(s) in the last hour (max %d); %.2f of %.2f GPU-hours of the lost-work budget used in the last %s\n",
		hour, l.cfg.Defrag.Limits.MaxPerHour, spent, l.cfg.Defrag.Limits.Budget(l.cluster.NumGPUs()), l.cfg.Defrag.Limits.BudgetWindow)
}

func orUID(user string, uid uint32) string {
	if user != "" {
		return user
	}
	return fmt.Sprint(uid)
}

// noPlan says why no plan exists: the jobs that may not be taken, by
// reason.
func noPlan(pr *defragrun.Proposal, cfgPath string) string {
	g := pr.Gang
	msg := fmt.Sprintf("no plan for job %s (%d GPUs, %s): no %s it may use can hold it with the jobs that may be requeued gone",
		g.Job.ID, g.Request.GPUs, g.Request.EffectiveTier(), g.Request.EffectiveTier())
	var reasons []string
	for why, n := range pr.Skipped {
		reasons = append(reasons, fmt.Sprintf("%d running job(s): %s", n, why))
	}
	sort.Strings(reasons)
	if len(reasons) > 0 {
		msg += "; not taken: " + strings.Join(reasons, "; ")
	}
	if cfgPath == "" {
		msg += " (no gangtopo.yaml was read: give --config)"
	}
	return msg
}

// writePendingPlans lists the pending gangs a plan could start, with its
// cost, or why none can (for frag --pending and why).
func (l *defragLive) writePendingPlans(w io.Writer, v *defragrun.View, p *defragrun.Planner, only string) {
	n := 0
	for _, pj := range v.Pending {
		if only != "" && pj.ID != only {
			continue
		}
		g, err := p.Gang(pj)
		if err != nil || g.Request.GPUs < 2 {
			continue
		}
		n++
		head := fmt.Sprintf("  job %-8s %3d GPUs %-6s waiting %5.1f h: ", pj.ID, g.Request.GPUs, g.Request.EffectiveTier(), v.At.Sub(pj.Submit).Hours())
		pr, ok := p.Propose(v, g, nil)
		switch {
		case !defragrun.Fixable(pj.Reason):
			fmt.Fprintln(w, head+unfixable(pj.Reason))
		case !ok:
			fmt.Fprintln(w, head+noPlan(pr, l.cfgPath))
		case pr.FitsNow:
			fmt.Fprintf(w, "%sfits now in %s %s: Slurm starts it at its next pass\n", head, g.Request.EffectiveTier(), pr.Domain)
		default:
			fmt.Fprintf(w, "%sa plan could start it: requeue %d job(s) holding %d GPUs in %s %s, cost %.2f (%.2f GPU-hours lost)%s\n",
				head, len(pr.Victims), pr.Plan.EvictGPUs, g.Request.EffectiveTier(), pr.Domain, pr.Plan.Cost, pr.Lost, limitNote(pr))
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none (no pending gang gangtopo decided about)")
	}
}

// unfixable says why no plan is made for a gang pending for reason.
func unfixable(reason string) string {
	if reason == "None" || reason == "" {
		return "Slurm has not looked at it yet (reason None): a plan is made once Slurm says it waits for resources"
	}
	return fmt.Sprintf("it waits for %s, which no requeue fixes: a plan is made only for Resources, Priority, ReqNodeNotAvail or NodeDown", reason)
}

func limitNote(pr *defragrun.Proposal) string {
	if pr.Limit == nil {
		return ""
	}
	return "; the limits refuse it now: " + pr.Limit.Error()
}
