package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/actuate"
	"github.com/gangtopo/gangtopo/cmd/gangtopo/internal/slurmstate"
	"github.com/gangtopo/gangtopo/selector/jobsubmit"
	"github.com/gangtopo/gangtopo/spank/ctld"
)

// unbind lists, and with --clear takes out, what the job_submit plugin
// wrote into pending jobs: the matching OR of gt_<domain> features and the
// whole free nodes it added to ExcNodeList. Both are right while the cluster
// file they came from is in force; after the topology is rebuilt (domains
// renamed) or gangtopo is removed, a job bound to features no node carries
// pends forever (BadConstraints). A rewritten shape (-N 4
// --gpus-per-node=8) stays valid on any cluster and is left alone. It also
// lists, and takes out, the pins gangtopo's controller made (a node list
// with its mark in the AdminComment, actuate.Pin: defrag's preemption pins,
// quota's reclaim pins), which otherwise last until the controller undoes
// them when they expire.
//
// The jobs are read from `squeue --json` (one JSON string per value), never
// from scontrol's text, where a job's name or comment can hold words that
// read like another field, and so decide what is changed in a job.

type unbindOptions struct {
	clear    bool
	prefix   string
	slurmBin string
	config   string
	door     *actuate.Door // made for the first change (--clear)
	w        io.Writer
}

func newUnbindCmd() *cobra.Command {
	o := unbindOptions{}
	cmd := &cobra.Command{
		Use:   "unbind [JOBID...]",
		Short: "List pending jobs gangtopo bound to domains (gt_* features, excluded nodes) or pinned to nodes; --clear takes them out",
		Long: `Unbind looks at pending jobs (the IDs given, or every pending job) and,
for each one whose gangtopo decision (in AdminComment, or Comment with
decision_field: comment) bound it, prints what gangtopo added: the matching OR
of node features over the domains (gt_leaf3|gt_leaf4...) and the nodes added
to ExcNodeList. With --clear it runs "scontrol update JobId=ID Features=...
ExcNodeList=..." to put back what the job had without gangtopo: the user's
own constraint and exclusions stay. Run it after rebuilding the topology with
renamed domains, or after removing gangtopo, so no job waits for features no
node carries. A rewritten shape (-N 4 --gpus-per-node=8) is valid anywhere and
is kept. It also lists the pins gangtopo's controller made (ReqNodeList with
a mark in the AdminComment: defrag's preemption pins, quota's reclaim pins),
with their owner and expiry; --clear takes them out too (the node list
cleared and the QOS put back, where the job still has what gangtopo set).
Jobs are read with "squeue --json". Needs Slurm's clients ($SLURM_CONF);
--clear needs an operator.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnbind(cmd.Context(), cmd.OutOrStdout(), args, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.clear, "clear", false, "take the bindings and pins out (scontrol update); without it, only list them")
	f.StringVar(&o.prefix, "feature-prefix", jobsubmit.DefaultFeaturePrefix, "gangtopo.yaml's feature_prefix")
	f.StringVar(&o.slurmBin, "slurm-bin", "", "`directory` holding squeue and scontrol (default: $PATH)")
	f.StringVar(&o.config, "config", "", "the plugin's gangtopo.yaml, whose actions.audit_log records each change --clear makes (default: $GANGTOPO_CONFIG, else "+ctld.DefaultConfigPath+")")
	return cmd
}

// binding is what gangtopo added to one pending job, and the job's fields
// without it.
type binding struct {
	job                        slurmJob
	features, excluded         string // as they are now
	newFeatures, newExcluded   string // without gangtopo's part
	changeFeatures, changeExcl bool
	note                       string // why a part is left as it is
}

func runUnbind(ctx context.Context, w io.Writer, ids []string, o unbindOptions) error {
	o.w = w
	if ctx == nil {
		ctx = context.Background()
	}
	recs, pins, err := o.read(ctx, ids)
	if err != nil {
		return err
	}
	found := 0
	for i := range recs {
		r := &recs[i]
		if r.State != "PENDING" || !wanted(r, ids) {
			continue
		}
		j := jobFromRecord(*r, r.Target())
		b, bound := bindingOf(j, o.prefix)
		p, pinned := pins[r.Target()]
		if !bound && !pinned {
			continue
		}
		found++
		fmt.Fprintf(w, "job %s: %s\n", j.id, j.stateLine())
		if err := o.report(ctx, w, b, bound, p, pinned); err != nil {
			return err
		}
	}
	if found == 0 {
		fmt.Fprintln(w, "gangtopo: no pending job carries a gangtopo binding or pin")
	}
	return nil
}

// read reads the jobs named (all pending ones: none named) and
// gangtopo's pins among them, by update target, from one squeue --json.
func (o *unbindOptions) read(ctx context.Context, ids []string) ([]slurmstate.Record, map[string]actuate.Pin, error) {
	args := []string{"--states=PENDING"}
	if len(ids) > 0 {
		args = []string{"--jobs=" + strings.Join(ids, ","), "--states=all"}
	}
	data, err := slurmstate.RunSqueueJSON(ctx, o.slurmBin, unbindTimeout, args...)
	if err != nil {
		return nil, nil, err
	}
	recs, err := slurmstate.ParseSqueueRecords(data, "squeue --json")
	if err != nil {
		return nil, nil, err
	}
	queued, err := slurmstate.ParseSqueuePending(data, "squeue --json")
	if err != nil {
		return nil, nil, err
	}
	pins := map[string]actuate.Pin{}
	for _, p := range actuate.Pins(queued) {
		pins[p.Job] = p
	}
	return recs, pins, nil
}

// unbindTimeout bounds each Slurm command of unbind.
const unbindTimeout = 30 * time.Second

// wanted says whether a record is one of the jobs named (all: none named).
func wanted(r *slurmstate.Record, ids []string) bool {
	if len(ids) == 0 {
		return true
	}
	for _, id := range ids {
		if r.Is(id) || r.Target() == id {
			return true
		}
	}
	return false
}

// bindingOf works out gangtopo's part of a pending job's features and
// exclusions from its decision; ok is false when there is none.
func bindingOf(j slurmJob, prefix string) (binding, bool) {
	if j.state != "PENDING" {
		return binding{}, false
	}
	d, err := jobsubmit.ParseDecision(j.adm)
	if err != nil {
		if d, err = jobsubmit.ParseDecision(j.comment); err != nil {
			return binding{}, false
		}
	}
	if len(d.Bound) == 0 && d.Excluded == "" {
		return binding{}, false
	}
	b := binding{job: j, features: j.features, excluded: j.excluded, newFeatures: j.features, newExcluded: j.excluded}
	if len(d.Bound) > 0 {
		expr := jobsubmit.BindingExpr(prefix, d.Bound)
		if user, ok := jobsubmit.UserFeatures(j.features, expr); ok {
			b.newFeatures, b.changeFeatures = user, true
		} else if strings.Contains(j.features, expr) {
			b.note = "its features were changed since gangtopo bound it; left as they are"
		}
	}
	if d.Excluded != "" && j.excluded != "" {
		b.newExcluded, b.changeExcl = jobsubmit.WithoutNodes(j.excluded, d.Excluded)
	}
	return b, b.changeFeatures || b.changeExcl || b.note != ""
}

// report prints what gangtopo put into one job (its binding, its pin)
// and, with --clear, takes it out.
func (o *unbindOptions) report(ctx context.Context, w io.Writer, b binding, bound bool, p actuate.Pin, pinned bool) error {
	if bound {
		if err := o.reportBinding(ctx, w, b); err != nil {
			return err
		}
	}
	if !pinned {
		return nil
	}
	ch := p.Undo("unbind", "unbind --clear: gangtopo's pin taken out")
	fmt.Fprintf(w, "  pin:         ReqNodeList=%s by gangtopo's %s, until %s", orNoneWord(p.ReqNodes), p.By, p.Until.UTC().Format(time.RFC3339))
	if p.Mark.QOS != "" {
		fmt.Fprintf(w, ", QOS %s to put back", p.Mark.QOS)
	}
	fmt.Fprintln(w)
	if !o.clear {
		return nil
	}
	door, err := o.changes()
	if err != nil {
		return err
	}
	if _, err := door.Do(ctx, ch); err != nil {
		return fmt.Errorf("unbind --clear: job %s: %w", p.Job, err)
	}
	fmt.Fprintln(w, "  pin taken out")
	return nil
}

func orNoneWord(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (o *unbindOptions) reportBinding(ctx context.Context, w io.Writer, b binding) error {
	none := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	var args []string
	if b.changeFeatures {
		fmt.Fprintf(w, "  Features:    %s -> %s\n", b.features, none(b.newFeatures))
		args = append(args, "Features="+b.newFeatures)
	}
	if b.changeExcl {
		fmt.Fprintf(w, "  ExcNodeList: %s -> %s\n", b.excluded, none(b.newExcluded))
		args = append(args, "ExcNodeList="+b.newExcluded)
	}
	if b.note != "" {
		fmt.Fprintf(w, "  note:        %s\n", b.note)
	}
	if !o.clear || len(args) == 0 {
		return nil
	}
	door, err := o.changes()
	if err != nil {
		return err
	}
	ch := actuate.Change{Entry: actuate.Entry{Action: "unbind", Job: b.job.id, Duty: "unbind", Reason: "gangtopo's binding taken out"},
		Cmd: "scontrol", Args: append([]string{"update", "JobId=" + b.job.id}, args...), Undo: true}
	if _, err := door.Do(ctx, ch); err != nil {
		return fmt.Errorf("unbind --clear: job %s: %w", b.job.id, err)
	}
	fmt.Fprintln(w, "  cleared")
	return nil
}

// changes is the door --clear changes jobs through, made on first use:
// gangtopo.yaml must load, for its audit log (each change is recorded
// before it is made).
func (o *unbindOptions) changes() (*actuate.Door, error) {
	if o.door != nil {
		return o.door, nil
	}
	path := o.config
	if path == "" {
		path = ctld.DefaultConfigPath
		if env := os.Getenv("GANGTOPO_CONFIG"); env != "" {
			path = env
		}
	}
	cfg, err := ctld.LoadConfig(path)
	if err != nil {
		return nil, usagef("unbind --clear records each change in gangtopo.yaml's actions.audit_log before it makes it: --config: %v", err)
	}
	o.door = commandDoor(cfg, o.slurmBin, "unbind --clear", o.w)
	return o.door, nil
}
